package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
)

func get(t *testing.T, h http.Handler, path string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestHandlerETags(t *testing.T) {
	h := newForTest(t).Handler()
	for _, path := range []string{PathV2, PathV3, PathV3 + "/api/v1", PathV3 + "/apis/apps/v1"} {
		t.Run(path, func(t *testing.T) {
			resp := get(t, h, path, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			again := get(t, h, path, map[string]string{"If-None-Match": etag})
			if again.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match: status %d, want 304", again.StatusCode)
			}
		})
	}
}

func TestHandlerV3Discovery(t *testing.T) {
	h := newForTest(t).Handler()
	var disc struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		}
	}
	body, _ := io.ReadAll(get(t, h, PathV3, nil).Body)
	if err := json.Unmarshal(body, &disc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for _, key := range []string{"api/v1", "apis/apps/v1", "apis/rbac.authorization.k8s.io/v1", "apis/events.k8s.io/v1"} {
		u := disc.Paths[key].ServerRelativeURL
		if !strings.HasPrefix(u, "/openapi/v3/"+key+"?hash=") {
			t.Errorf("%s: serverRelativeURL %q", key, u)
			continue
		}
		resp := get(t, h, u, nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: status %d, Cache-Control %q", u, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	if resp := get(t, h, PathV3+"/apis/nope/v1", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group-version: status %d, want 404", resp.StatusCode)
	}
	pb := get(t, h, PathV3+"/api/v1", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"})
	if pb.StatusCode != http.StatusOK || !strings.Contains(pb.Header.Get("Content-Type"), "protobuf") {
		t.Errorf("v3 protobuf: status %d, Content-Type %q", pb.StatusCode, pb.Header.Get("Content-Type"))
	}
}

// TestClientGo reads the documents the way kubectl does: the v2 document as
// protobuf through discovery, and v3 through the openapi3 root that
// kubectl explain uses to find a kind's schema.
func TestClientGo(t *testing.T) {
	srv := httptest.NewServer(newForTest(t).Handler())
	defer srv.Close()
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema (v2 protobuf): %v", err)
	}
	found := false
	for _, def := range v2.GetDefinitions().GetAdditionalProperties() {
		found = found || def.GetName() == "io.k8s.api.core.v1.Pod"
	}
	if !found {
		t.Error("v2 protobuf document lacks io.k8s.api.core.v1.Pod")
	}

	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	if len(gvs) != len(newForTest(t).gvOrder) {
		t.Errorf("group-versions %v", gvs)
	}
	doc, err := root.GVSpec(schema.GroupVersion{Group: "apps", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	dep := doc.Components.Schemas["io.k8s.api.apps.v1.Deployment"]
	if dep == nil || !hasGVK(dep.Extensions["x-kubernetes-group-version-kind"], schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
		t.Fatalf("Deployment schema or its GVK missing: %v", dep)
	}
	// kubectl explain deployments.spec.template.spec.containers walks refs.
	spec := doc.Components.Schemas["io.k8s.api.apps.v1.DeploymentSpec"]
	if spec == nil {
		t.Fatal("DeploymentSpec missing")
	}
	if tmpl, ok := spec.Properties["template"]; !ok || tmpl.AllOf == nil && tmpl.Ref.String() == "" {
		t.Errorf("DeploymentSpec.template has no reference: %+v", spec)
	}
}
