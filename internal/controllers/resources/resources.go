package resources

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Resource is one discovered resource.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      []string
}

// Has reports whether the resource supports verb.
func (r Resource) Has(verb string) bool { return slices.Contains(r.Verbs, verb) }

// Discover lists the top-level resources supporting every verb in verbs,
// in each group's preferred version. A partial discovery failure returns
// what was found together with the error, so callers can proceed with it.
func Discover(d discovery.DiscoveryInterface, verbs ...string) ([]Resource, error) {
	groups, lists, err := d.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	preferred := map[string]string{}
	for _, g := range groups {
		if g != nil && g.PreferredVersion.Version != "" {
			preferred[g.Name] = g.PreferredVersion.Version
		}
	}
	seen := map[schema.GroupResource]int{}
	var out []Resource
	for _, l := range lists {
		if l == nil {
			continue
		}
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !accept(r, verbs) {
				continue
			}
			res := Resource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Verbs: r.Verbs}
			gr := res.GVR.GroupResource()
			if i, ok := seen[gr]; ok {
				// Keep the group's preferred version over any other.
				if preferred[gv.Group] == gv.Version && out[i].GVR.Version != gv.Version {
					out[i] = res
				}
				continue
			}
			seen[gr] = len(out)
			out = append(out, res)
		}
	}
	if err != nil {
		return out, fmt.Errorf("discovery (partial): %w", err)
	}
	return out, nil
}

func accept(r metav1.APIResource, verbs []string) bool {
	if strings.Contains(r.Name, "/") {
		return false
	}
	for _, v := range verbs {
		if !slices.Contains(r.Verbs, v) {
			return false
		}
	}
	return true
}
