package openapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one served resource for the documents: enough to name
// its definitions, tag them with their GroupVersionKind and describe its
// paths.
type Resource struct {
	// GroupVersionKind of the objects ("" group for core).
	GroupVersionKind schema.GroupVersionKind
	// Resource is the plural lowercase name used in URLs ("pods").
	Resource string
	// Namespaced resources live under /namespaces/{namespace}/.
	Namespaced bool
	// Verbs served; empty means all of get, list, watch, create, update,
	// patch, delete and deletecollection.
	Verbs []string
	// Subresources served. "status", "scale", "eviction", "binding" and
	// "token" get paths; others ("proxy", "finalize", …) are left out of
	// the documents.
	Subresources []string

	// ModelName is the definition name of the Kind. Empty means the k8s.io/api
	// convention, io.k8s.api.<first label of the group, or core>.<version>.<Kind>,
	// which holds for every built-in group Myriad serves.
	ModelName string
	// ListModelName is the definition name of the list; empty means
	// ModelName + "List". A resource that serves neither list nor watch
	// has none (Binding).
	ListModelName string
}

// withDefaults returns r with its optional fields filled.
func (r Resource) withDefaults() Resource {
	if r.ModelName == "" && r.GroupVersionKind.Group == "apiextensions.k8s.io" {
		// The CRD types live in apiextensions-apiserver, not k8s.io/api.
		r.ModelName = fmt.Sprintf("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.%s.%s", r.GroupVersionKind.Version, r.GroupVersionKind.Kind)
	}
	if r.ModelName == "" {
		pkg := "core"
		if g := r.GroupVersionKind.Group; g != "" {
			pkg, _, _ = strings.Cut(g, ".")
		}
		r.ModelName = fmt.Sprintf("io.k8s.api.%s.%s.%s", pkg, r.GroupVersionKind.Version, r.GroupVersionKind.Kind)
		if r.GroupVersionKind.Group == apiRegistrationGroup {
			r.ModelName = aggregatorModelName(r.GroupVersionKind)
		}
	}
	if len(r.Verbs) == 0 {
		r.Verbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	}
	if r.ListModelName == "" && (r.hasVerb("list") || r.hasVerb("watch")) {
		r.ListModelName = r.ModelName + "List"
	}
	return r
}

// modelNames are the definitions r names: its kind's and its list's.
func (r Resource) modelNames() []string {
	if r.ListModelName == "" {
		return []string{r.ModelName}
	}
	return []string{r.ModelName, r.ListModelName}
}

func (r Resource) hasVerb(v string) bool {
	for _, have := range r.Verbs {
		if have == v {
			return true
		}
	}
	return false
}

// gvPath is the group-version's URL path without the leading slash, which is
// also its key in the v3 discovery document: "api/v1", "apis/apps/v1".
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}
