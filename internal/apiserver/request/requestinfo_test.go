package request

import (
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	type want = RequestInfo
	tests := []struct {
		method, url string
		want        want
	}{
		// Non-resource and discovery paths.
		{"GET", "/", want{Path: "/", Verb: "get"}},
		{"GET", "/api", want{Path: "/api", Verb: "get"}},
		{"GET", "/api/v1", want{Path: "/api/v1", Verb: "get"}},
		{"GET", "/apis", want{Path: "/apis", Verb: "get"}},
		{"GET", "/apis/apps", want{Path: "/apis/apps", Verb: "get"}},
		{"GET", "/apis/apps/v1", want{Path: "/apis/apps/v1", Verb: "get", APIPrefix: "apis"}}, // upstream sets the prefix here too
		{"GET", "/healthz", want{Path: "/healthz", Verb: "get"}},
		{"POST", "/openapi/v2", want{Path: "/openapi/v2", Verb: "post"}},
		{"GET", "/other/v1/pods", want{Path: "/other/v1/pods", Verb: "get"}},

		// Core group.
		{"GET", "/api/v1/pods", want{IsResourceRequest: true, Path: "/api/v1/pods", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/pods/", want{IsResourceRequest: true, Path: "/api/v1/pods/", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},
		{"HEAD", "/api/v1/namespaces/ns/pods/x", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods/x", Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "x", Parts: []string{"pods", "x"}}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=1", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=false", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=0", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"POST", "/api/v1/namespaces/ns/pods", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "create",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"PUT", "/api/v1/namespaces/ns/pods/x/status", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods/x/status", Verb: "update",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Subresource: "status", Name: "x", Parts: []string{"pods", "x", "status"}}},
		{"PATCH", "/api/v1/nodes/n1/status", want{IsResourceRequest: true, Path: "/api/v1/nodes/n1/status", Verb: "patch",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Subresource: "status", Name: "n1", Parts: []string{"nodes", "n1", "status"}}},
		{"DELETE", "/api/v1/namespaces/ns/pods/x", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods/x", Verb: "delete",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "x", Parts: []string{"pods", "x"}}},
		{"DELETE", "/api/v1/namespaces/ns/pods", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "deletecollection",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"OPTIONS", "/api/v1/pods", want{IsResourceRequest: true, Path: "/api/v1/pods", Verb: "",
			APIPrefix: "api", APIVersion: "v1", Resource: "pods", Parts: []string{"pods"}}},

		// The namespace object itself, and its own subresources.
		{"GET", "/api/v1/namespaces", want{IsResourceRequest: true, Path: "/api/v1/namespaces", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "namespaces", Parts: []string{"namespaces"}}},
		{"GET", "/api/v1/namespaces/ns", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns", Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns", Parts: []string{"namespaces", "ns"}}},
		{"PUT", "/api/v1/namespaces/ns/finalize", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/finalize", Verb: "update",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Subresource: "finalize", Name: "ns", Parts: []string{"namespaces", "ns", "finalize"}}},
		{"GET", "/api/v1/namespaces/ns/status", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/status", Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Subresource: "status", Name: "ns", Parts: []string{"namespaces", "ns", "status"}}},

		// Named groups.
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", want{IsResourceRequest: true, Path: "/apis/apps/v1/namespaces/ns/deployments/d/scale", Verb: "get",
			APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Namespace: "ns", Resource: "deployments", Subresource: "scale", Name: "d", Parts: []string{"deployments", "d", "scale"}}},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", want{IsResourceRequest: true, Path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", Verb: "list",
			APIPrefix: "apis", APIGroup: "coordination.k8s.io", APIVersion: "v1", Namespace: "kube-node-lease", Resource: "leases", Parts: []string{"leases"}}},

		// Legacy watch and proxy paths.
		{"GET", "/api/v1/watch/namespaces/ns/pods", want{IsResourceRequest: true, Path: "/api/v1/watch/namespaces/ns/pods", Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Parts: []string{"pods"}}},
		{"GET", "/api/v1/watch/pods/x", want{IsResourceRequest: true, Path: "/api/v1/watch/pods/x", Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Resource: "pods", Name: "x", Parts: []string{"pods", "x"}}},
		{"GET", "/apis/apps/v1/watch/deployments", want{IsResourceRequest: true, Path: "/apis/apps/v1/watch/deployments", Verb: "watch",
			APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Parts: []string{"deployments"}}},
		// Connect subresources: GET is get, POST create, the proxy
		// path below the subresource stays in Parts.
		{"POST", "/api/v1/namespaces/ns/pods/x/exec", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods/x/exec", Verb: "create",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Subresource: "exec", Name: "x", Parts: []string{"pods", "x", "exec"}}},
		{"GET", "/api/v1/namespaces/ns/pods/x/portforward", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods/x/portforward", Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Subresource: "portforward", Name: "x", Parts: []string{"pods", "x", "portforward"}}},
		{"PUT", "/api/v1/nodes/n1:10250/proxy/stats/summary/", want{IsResourceRequest: true, Path: "/api/v1/nodes/n1:10250/proxy/stats/summary/", Verb: "update",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Subresource: "proxy", Name: "n1:10250", Parts: []string{"nodes", "n1:10250", "proxy", "stats", "summary"}}},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/x/a/b", want{IsResourceRequest: true, Path: "/api/v1/proxy/namespaces/ns/pods/x/a/b", Verb: "proxy",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "x", Parts: []string{"pods", "x", "a", "b"}}},

		// Single-object list/watch by field selector is named, as upstream.
		{"GET", "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dx&watch=true", want{IsResourceRequest: true, Path: "/api/v1/namespaces/ns/pods", Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "pods", Name: "x", FieldSelector: "metadata.name=x", Parts: []string{"pods"}}},
		{"GET", "/api/v1/watch/nodes?fieldSelector=metadata.name%3Dn1", want{IsResourceRequest: true, Path: "/api/v1/watch/nodes", Verb: "watch",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Parts: []string{"nodes"}}}, // upstream names only GET-derived list/watch
		{"GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dn1", want{IsResourceRequest: true, Path: "/api/v1/nodes", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", Name: "n1", FieldSelector: "metadata.name=n1", Parts: []string{"nodes"}}},
		{"GET", "/api/v1/nodes?fieldSelector=metadata.name%21%3Dn1", want{IsResourceRequest: true, Path: "/api/v1/nodes", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", FieldSelector: "metadata.name!=n1", Parts: []string{"nodes"}}},
		{"GET", "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue", want{IsResourceRequest: true, Path: "/api/v1/nodes", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", FieldSelector: "spec.unschedulable=true", Parts: []string{"nodes"}}},
		{"GET", "/api/v1/nodes?fieldSelector=metadata.name%3D..", want{IsResourceRequest: true, Path: "/api/v1/nodes", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", FieldSelector: "metadata.name=..", Parts: []string{"nodes"}}},
		{"GET", "/api/v1/nodes?fieldSelector=%3D%3D%3D", want{IsResourceRequest: true, Path: "/api/v1/nodes", Verb: "list",
			APIPrefix: "api", APIVersion: "v1", Resource: "nodes", FieldSelector: "===", Parts: []string{"nodes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			got, err := Parse(httptest.NewRequest(tt.method, tt.url, nil))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestParseRejectsAmbiguousPaths(t *testing.T) {
	for _, url := range []string{
		"/api/v1/namespaces/../pods",
		"/api/v1/namespaces/ns/pods/..",
		"/apis/apps/v1/./deployments",
		"/api/v1/namespaces//pods",
		"/healthz/../api/v1/secrets",
		"/api/v1/watch",
	} {
		t.Run(url, func(t *testing.T) {
			// httptest.NewRequest would not clean the path either; set it
			// directly to be sure nothing normalizes it first.
			r := httptest.NewRequest("GET", "/", nil)
			r.URL.Path = url
			if _, err := Parse(r); !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("Parse(%q) error = %v, want ErrInvalidPath", url, err)
			}
		})
	}
}

func TestLongRunningAndReadOnly(t *testing.T) {
	tests := []struct {
		method, url     string
		longRunning, ro bool
	}{
		{"GET", "/api/v1/pods?watch=true", true, true},
		{"GET", "/api/v1/watch/pods", true, true},
		{"GET", "/api/v1/pods", false, true},
		{"GET", "/api/v1/namespaces/ns/pods/x/log", true, true},
		{"POST", "/api/v1/namespaces/ns/pods/x/exec", true, false},
		{"GET", "/api/v1/namespaces/ns/pods/x/portforward", true, true},
		{"POST", "/api/v1/namespaces/ns/pods", false, false},
		{"PATCH", "/api/v1/nodes/n", false, false},
		{"DELETE", "/api/v1/namespaces/ns/pods", false, false},
		{"GET", "/healthz", false, true},
		{"HEAD", "/healthz", false, true},
		{"POST", "/healthz", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			ri, err := Parse(httptest.NewRequest(tt.method, tt.url, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := ri.IsLongRunning(); got != tt.longRunning {
				t.Errorf("IsLongRunning = %v, want %v", got, tt.longRunning)
			}
			if got := ri.IsReadOnly(); got != tt.ro {
				t.Errorf("IsReadOnly = %v, want %v", got, tt.ro)
			}
		})
	}
}
