package apiserver

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/registry"
)

// discovery holds the precomputed discovery documents of one set of served
// resources; the server replaces it whole when the custom resources change.
type discovery struct {
	groups []string // API groups in serving order, "" (core) first
	// byGV lists the resources of each group version.
	byGV     map[schema.GroupVersion][]*registry.Resource
	versions map[string][]string // group -> versions
	// aggregated documents for /api and /apis, and their ETags.
	aggregatedCore, aggregatedGroups []byte
	etagCore, etagGroups             string
}

const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func newDiscovery(resources []*registry.Resource) (*discovery, error) {
	d := &discovery{byGV: map[schema.GroupVersion][]*registry.Resource{}, versions: map[string][]string{}}
	for _, r := range resources {
		gv := r.GroupVersion
		if _, ok := d.byGV[gv]; !ok {
			if _, seen := d.versions[gv.Group]; !seen {
				d.groups = append(d.groups, gv.Group)
			}
			d.versions[gv.Group] = append(d.versions[gv.Group], gv.Version)
		}
		d.byGV[gv] = append(d.byGV[gv], r)
	}
	var err error
	if d.aggregatedCore, err = json.Marshal(d.aggregated(true)); err != nil {
		return nil, err
	}
	if d.aggregatedGroups, err = json.Marshal(d.aggregated(false)); err != nil {
		return nil, err
	}
	d.etagCore = etag(d.aggregatedCore)
	d.etagGroups = etag(d.aggregatedGroups)
	return d, nil
}

func etag(b []byte) string { return fmt.Sprintf("%q", fmt.Sprintf("%X", sha256.Sum256(b))) }

// resourceList is the /api/v1 or /apis/g/v document.
func (d *discovery) resourceList(gv schema.GroupVersion) (*metav1.APIResourceList, bool) {
	rs, ok := d.byGV[gv]
	if !ok {
		return nil, false
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range rs {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Resource, SingularName: r.SingularName, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
			StorageVersionHash: storageVersionHash(r),
		})
		for _, sub := range r.Subresources {
			kind, verbs := subresourceShape(r, sub)
			ar := metav1.APIResource{Name: r.Resource + "/" + sub, Namespaced: r.Namespaced, Kind: kind, Verbs: verbs}
			if gv, ok := subresourceGroupVersion[sub]; ok {
				ar.Group, ar.Version = gv.Group, gv.Version
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	return list, true
}

// subresourceGroupVersion: the subresources whose kind is of another
// group, which discovery names as upstream does. Clients pick their codec
// by it: client-go's scale client for autoscaling/v1 Scale, and kubectl
// drain evicts only when pods/eviction names policy's Eviction (without
// it, drain deletes pods, ignoring their PodDisruptionBudgets).
var subresourceGroupVersion = map[string]schema.GroupVersion{
	"scale":    {Group: "autoscaling", Version: "v1"},
	"eviction": {Group: "policy", Version: "v1"},
	"token":    {Group: "authentication.k8s.io", Version: "v1"},
}

// subresourceShape is the kind and verbs upstream advertises per subresource.
func subresourceShape(r *registry.Resource, sub string) (string, metav1.Verbs) {
	switch sub {
	case "status", "approval", "ephemeralcontainers", "resize":
		return r.Kind, metav1.Verbs{"get", "patch", "update"}
	case "scale":
		return "Scale", metav1.Verbs{"get", "patch", "update"}
	case "binding":
		return "Binding", metav1.Verbs{"create"}
	case "eviction":
		return "Eviction", metav1.Verbs{"create"}
	case "token":
		return "TokenRequest", metav1.Verbs{"create"}
	case "finalize":
		return r.Kind, metav1.Verbs{"update"}
	case "log":
		return r.Kind, metav1.Verbs{"get"}
	case "exec", "attach", "portforward":
		return connectKinds[sub], metav1.Verbs{"create", "get"}
	case "proxy":
		return r.Kind + "ProxyOptions", metav1.Verbs{"create", "delete", "get", "patch", "update"}
	}
	return r.Kind, metav1.Verbs{"get"}
}

// connectKinds are the options kinds upstream's discovery names for the
// streaming subresources.
var connectKinds = map[string]string{"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}

func storageVersionHash(r *registry.Resource) string {
	sum := sha256.Sum256([]byte(r.GroupVersion.String() + "/" + r.Kind))
	return fmt.Sprintf("%x", sum[:8])[:11]
}

func (d *discovery) group(g string) (*metav1.APIGroup, bool) {
	vs, ok := d.versions[g]
	if !ok || g == "" {
		return nil, false
	}
	grp := &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g}
	for _, v := range vs {
		grp.Versions = append(grp.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
	}
	grp.PreferredVersion = grp.Versions[0]
	return grp, true
}

func (d *discovery) groupList() *metav1.APIGroupList {
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range d.groups {
		if grp, ok := d.group(g); ok {
			list.Groups = append(list.Groups, *grp)
		}
	}
	return list
}

// aggregated builds the apidiscovery.k8s.io/v2 document for /api (core) or
// /apis (every named group), which kubectl fetches in one request.
func (d *discovery) aggregated(core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	out := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	for _, g := range d.groups {
		if (g == "") != core {
			continue
		}
		grp := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}}
		for _, v := range d.versions[g] {
			ver := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, r := range d.byGV[schema.GroupVersion{Group: g, Version: v}] {
				scope := apidiscoveryv2.ScopeCluster
				if r.Namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource: r.Resource, SingularResource: r.SingularName, Scope: scope,
					ResponseKind: &metav1.GroupVersionKind{Group: g, Version: v, Kind: r.Kind},
					Verbs:        r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
				}
				for _, sub := range r.Subresources {
					kind, verbs := subresourceShape(r, sub)
					rk := &metav1.GroupVersionKind{Group: g, Version: v, Kind: kind}
					if gv, ok := subresourceGroupVersion[sub]; ok {
						rk.Group, rk.Version = gv.Group, gv.Version
					}
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub, ResponseKind: rk, Verbs: verbs})
				}
				ver.Resources = append(ver.Resources, rd)
			}
			sort.Slice(ver.Resources, func(i, j int) bool { return ver.Resources[i].Resource < ver.Resources[j].Resource })
			grp.Versions = append(grp.Versions, ver)
		}
		out.Items = append(out.Items, grp)
	}
	return out
}

func wantsAggregated(r *http.Request) bool {
	for _, c := range parseAccept(r.Header.Get("Accept")) {
		if c.params["g"] == "apidiscovery.k8s.io" && c.params["as"] == "APIGroupDiscoveryList" {
			return c.params["v"] == "v2"
		}
		if c.typ == "application" && c.subtype == "json" && c.params["as"] == "" {
			return false
		}
	}
	return false
}

// serveDiscovery answers /api, /apis, /apis/<g>, /api/v1 and /apis/<g>/<v>.
// ok is false for paths that are not discovery.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	d := s.discovery.Load()
	switch {
	case len(parts) == 1 && parts[0] == "api":
		if wantsAggregated(r) {
			writeAggregated(w, r, d.aggregatedCore, d.etagCore)
			return true
		}
		s.writeJSON(w, r, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
		return true
	case len(parts) == 1 && parts[0] == "apis":
		if wantsAggregated(r) {
			writeAggregated(w, r, d.aggregatedGroups, d.etagGroups)
			return true
		}
		s.writeJSON(w, r, d.groupList())
		return true
	case len(parts) == 2 && parts[0] == "api":
		if list, ok := d.resourceList(schema.GroupVersion{Version: parts[1]}); ok {
			s.writeJSON(w, r, list)
			return true
		}
	case len(parts) == 2 && parts[0] == "apis":
		if grp, ok := d.group(parts[1]); ok {
			s.writeJSON(w, r, grp)
			return true
		}
	case len(parts) == 3 && parts[0] == "apis":
		if list, ok := d.resourceList(schema.GroupVersion{Group: parts[1], Version: parts[2]}); ok {
			s.writeJSON(w, r, list)
			return true
		}
	}
	return false
}

func writeAggregated(w http.ResponseWriter, r *http.Request, body []byte, tag string) {
	w.Header().Set("Content-Type", aggregatedDiscoveryType)
	w.Header().Set("ETag", tag)
	w.Header().Set("Vary", "Accept")
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(body)
}

// writeJSON answers with a plain JSON document (discovery, version).
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Vary", "Accept")
	enc := json.NewEncoder(w)
	if r.URL.Query().Get("pretty") == "true" {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		s.log.Debug("writing JSON failed", "path", r.URL.Path, "err", err)
	}
}
