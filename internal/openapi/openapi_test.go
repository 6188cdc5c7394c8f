package openapi

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// served mirrors the resources Myriad serves, with the subresources that
// have bodies described here.
func served() []Resource {
	core := func(kind, res string, ns bool, sub ...string) Resource {
		return Resource{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: kind}, Resource: res, Namespaced: ns, Subresources: sub}
	}
	group := func(g, kind, res string, ns bool, sub ...string) Resource {
		return Resource{GroupVersionKind: schema.GroupVersionKind{Group: g, Version: "v1", Kind: kind}, Resource: res, Namespaced: ns, Subresources: sub}
	}
	return []Resource{
		core("Pod", "pods", true, "status", "binding", "eviction"),
		// Served without a list kind: only POST to the collection.
		{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, Resource: "bindings", Namespaced: true, Verbs: []string{"create"}},
		core("Namespace", "namespaces", false, "status", "finalize"),
		core("Node", "nodes", false, "status"),
		core("Service", "services", true, "status"),
		core("ConfigMap", "configmaps", true),
		core("Secret", "secrets", true),
		core("ServiceAccount", "serviceaccounts", true, "token"),
		core("Event", "events", true),
		group("apps", "Deployment", "deployments", true, "status", "scale"),
		group("apps", "ReplicaSet", "replicasets", true, "status", "scale"),
		group("apps", "StatefulSet", "statefulsets", true, "status", "scale"),
		group("apps", "DaemonSet", "daemonsets", true, "status"),
		group("coordination.k8s.io", "Lease", "leases", true),
		group("discovery.k8s.io", "EndpointSlice", "endpointslices", true),
		group("events.k8s.io", "Event", "events", true),
		group("scheduling.k8s.io", "PriorityClass", "priorityclasses", false),
		group("policy", "PodDisruptionBudget", "poddisruptionbudgets", true, "status"),
		group("rbac.authorization.k8s.io", "Role", "roles", true),
		group("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", false),
		group("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", true),
		group("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", false),
	}
}

var (
	sharedOnce sync.Once
	shared     *OpenAPI
	sharedErr  error
)

// newForTest builds the documents once per test binary; building is the
// slow part and the result is immutable.
func newForTest(t *testing.T) *OpenAPI {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = New(Config{Resources: served()}) })
	if sharedErr != nil {
		t.Fatalf("New: %v", sharedErr)
	}
	return shared
}

func hasGVK(ext interface{}, gvk schema.GroupVersionKind) bool {
	list, _ := ext.([]interface{})
	for _, e := range list {
		m, _ := e.(map[string]interface{})
		if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return true
		}
	}
	return false
}

func TestV2HasPodWithExtensions(t *testing.T) {
	o := newForTest(t)
	// Round-trip through JSON: that is what clients see.
	raw, err := json.Marshal(o.V2())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Definitions map[string]struct {
			Extensions interface{} `json:"x-kubernetes-group-version-kind"`
			Properties map[string]map[string]interface{}
		}
		Paths map[string]map[string]interface{}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for name, gvk := range map[string]schema.GroupVersionKind{
		"io.k8s.api.core.v1.Pod":                      {Version: "v1", Kind: "Pod"},
		"io.k8s.api.core.v1.PodList":                  {Version: "v1", Kind: "PodList"},
		"io.k8s.api.apps.v1.Deployment":               {Group: "apps", Version: "v1", Kind: "Deployment"},
		"io.k8s.api.rbac.v1.ClusterRole":              {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
		"io.k8s.api.events.v1.Event":                  {Group: "events.k8s.io", Version: "v1", Kind: "Event"},
		"io.k8s.api.autoscaling.v1.Scale":             {Group: "autoscaling", Version: "v1", Kind: "Scale"},
		"io.k8s.apimachinery.pkg.apis.meta.v1.Status": {Version: "v1", Kind: "Status"},
		"io.k8s.api.policy.v1.Eviction":               {Group: "policy", Version: "v1", Kind: "Eviction"},
		"io.k8s.api.authentication.v1.TokenRequest":   {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
	} {
		def, ok := doc.Definitions[name]
		if !ok {
			t.Errorf("definition %s missing", name)
			continue
		}
		if !hasGVK(def.Extensions, gvk) {
			t.Errorf("%s: x-kubernetes-group-version-kind = %v, want %v", name, def.Extensions, gvk)
		}
	}
	if ops := doc.Paths["/api/v1/namespaces/{namespace}/bindings"]; ops["post"] == nil || ops["get"] != nil {
		t.Errorf("bindings operations %v, want post only", ops)
	}
	if _, ok := doc.Paths["/api/v1/namespaces/{namespace}/bindings/{name}"]; ok {
		t.Errorf("bindings has item paths")
	}
	containers := doc.Definitions["io.k8s.api.core.v1.PodSpec"].Properties["containers"]
	if containers["x-kubernetes-patch-merge-key"] != "name" || containers["x-kubernetes-patch-strategy"] != "merge" || containers["x-kubernetes-list-type"] != "map" {
		t.Errorf("PodSpec.containers extensions = %v", containers)
	}
	for _, p := range []string{"/api/v1/namespaces/{namespace}/pods/{name}", "/api/v1/pods", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
		"/api/v1/namespaces/{namespace}/pods/{name}/eviction", "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
		"/api/v1/namespaces/{namespace}/pods/{name}/status"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("path %s missing", p)
		}
	}
}

// TestV3RefsResolve checks every group-version document is self-contained:
// each $ref names a schema of the same document.
func TestV3RefsResolve(t *testing.T) {
	o := newForTest(t)
	for _, key := range o.gvOrder {
		t.Run(key, func(t *testing.T) {
			raw, err := json.Marshal(o.v3[key])
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]interface{}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			schemas := doc["components"].(map[string]interface{})["schemas"].(map[string]interface{})
			var refs int
			walk(doc, func(ref string) {
				refs++
				name, ok := strings.CutPrefix(ref, "#/components/schemas/")
				if !ok {
					t.Errorf("ref %q outside components.schemas", ref)
				} else if _, ok := schemas[name]; !ok {
					t.Errorf("ref %q does not resolve", ref)
				}
			})
			if refs == 0 {
				t.Error("no refs at all")
			}
		})
	}
}

func walk(v interface{}, ref func(string)) {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				ref(s)
				continue
			}
			walk(e, ref)
		}
	case []interface{}:
		for _, e := range v {
			walk(e, ref)
		}
	}
}

// TestV3PatchOperationAdvertisesFieldValidation mirrors kubectl's
// QueryParamVerifierV3, which decides whether to validate server-side.
func TestV3PatchOperationAdvertisesFieldValidation(t *testing.T) {
	o := newForTest(t)
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	} {
		doc, ok := o.V3(gvk.GroupVersion())
		if !ok {
			t.Fatalf("no v3 document for %v", gvk.GroupVersion())
		}
		found := false
		for _, p := range doc.Paths.Paths {
			op := p.Patch
			if op == nil {
				continue
			}
			m, _ := op.Extensions["x-kubernetes-group-version-kind"].(map[string]interface{})
			if m["kind"] != gvk.Kind || m["group"] != gvk.Group {
				continue
			}
			for _, param := range append(op.Parameters, p.Parameters...) {
				if param.Name == "fieldValidation" && param.In == "query" {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%v: no PATCH operation with the fieldValidation query parameter", gvk)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	pod := served()[0]
	for name, cfg := range map[string]Config{
		"empty":        {},
		"unknown kind": {Resources: []Resource{{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Nope"}, Resource: "nopes"}}},
		"no plural":    {Resources: []Resource{{GroupVersionKind: pod.GroupVersionKind}}},
		"duplicate":    {Resources: []Resource{pod, pod}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
