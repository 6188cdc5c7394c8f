package apiserver

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBadInput: every malformed request gets the upstream Status code and
// reason, never a 500.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap("exists", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		cms  = "/api/v1/namespaces/default/configmaps"
		pods = "/api/v1/namespaces/default/pods"
		js   = "Content-Type: application/json"
		yml  = "Content-Type: application/yaml"
		pb   = "Content-Type: " + protoType
	)
	cm := func(mod func(m map[string]any)) []byte {
		m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "new"}, "data": map[string]any{"a": "b"}}
		mod(m)
		return mustJSON(t, m)
	}
	metaOf := func(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }
	tests := []struct {
		name         string
		method, path string
		body         []byte
		headers      []string
		code         int
		reason       metav1.StatusReason
		msgContains  string
		noCauses     bool // a 422 that upstream sends without field causes
		// bare: upstream answers http.NotFound, no Status (an unknown group
		// or path falls through to its notfoundhandler).
		bare bool
	}{
		{name: "malformed json", method: "POST", path: cms, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap",`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "json of wrong shape", method: "POST", path: cms, body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":"oops"}`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "json array", method: "POST", path: cms, body: []byte(`[1,2]`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed yaml", method: "POST", path: cms, body: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n"), headers: []string{yml}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed protobuf", method: "POST", path: cms, body: []byte("k8s\x00\x0a\x99\x99garbage"), headers: []string{pb}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "protobuf without magic", method: "POST", path: cms, body: []byte("not protobuf"), headers: []string{pb}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "empty body", method: "POST", path: cms, body: []byte{}, headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong kind", method: "POST", path: cms, body: cm(func(m map[string]any) { m["kind"] = "Namespace" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "kind"},
		{name: "unknown kind", method: "POST", path: cms, body: cm(func(m map[string]any) { m["kind"] = "Nonsense" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong apiVersion", method: "POST", path: cms, body: cm(func(m map[string]any) { m["apiVersion"] = "apps/v1" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "namespace mismatch", method: "POST", path: cms, body: cm(func(m map[string]any) { metaOf(m)["namespace"] = "other" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "namespace"},
		{name: "resourceVersion on create", method: "POST", path: cms, body: cm(func(m map[string]any) { metaOf(m)["resourceVersion"] = "5" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "resourceVersion"},
		{name: "name mismatch on PUT", method: "PUT", path: cms + "/exists", body: cm(func(m map[string]any) { metaOf(m)["name"] = "other" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "does not match"},
		{name: "namespace mismatch on PUT", method: "PUT", path: cms + "/exists", body: cm(func(m map[string]any) { metaOf(m)["name"] = "exists"; metaOf(m)["namespace"] = "other" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad resourceVersion on PUT", method: "PUT", path: cms + "/exists", body: cm(func(m map[string]any) { metaOf(m)["name"] = "exists"; metaOf(m)["resourceVersion"] = "abc" }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "strict unknown field", method: "POST", path: cms + "?fieldValidation=Strict", body: cm(func(m map[string]any) { m["bogus"] = 1 }), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "bogus"},
		{name: "strict duplicate field", method: "POST", path: cms + "?fieldValidation=Strict", body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{},"data":{}}`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "duplicate"},
		{name: "bad fieldValidation", method: "POST", path: cms + "?fieldValidation=Loose", body: cm(func(map[string]any) {}), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid name", method: "POST", path: cms, body: cm(func(m map[string]any) { metaOf(m)["name"] = "Not_Valid" }), headers: []string{js}, code: 422, reason: metav1.StatusReasonInvalid},
		{name: "no name", method: "POST", path: cms, body: cm(func(m map[string]any) { delete(metaOf(m), "name") }), headers: []string{js}, code: 422, reason: metav1.StatusReasonInvalid},
		{name: "invalid pod", method: "POST", path: pods, body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[]}}`), headers: []string{js}, code: 422, reason: metav1.StatusReasonInvalid, msgContains: "spec.containers"},
		{name: "already exists", method: "POST", path: cms, body: cm(func(m map[string]any) { metaOf(m)["name"] = "exists" }), headers: []string{js}, code: 409, reason: metav1.StatusReasonAlreadyExists},
		{name: "update missing", method: "PUT", path: cms + "/missing", body: cm(func(m map[string]any) { metaOf(m)["name"] = "missing" }), headers: []string{js}, code: 404, reason: metav1.StatusReasonNotFound},
		{name: "post to a name", method: "POST", path: cms + "/exists", body: cm(func(map[string]any) {}), headers: []string{js}, code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "unknown field selector", method: "GET", path: cms + "?fieldSelector=spec.bogus%3Dx", code: 400, reason: metav1.StatusReasonBadRequest, msgContains: "not a known field selector"},
		{name: "unparsable field selector", method: "GET", path: cms + "?fieldSelector=%3D%3D%3D", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid label selector", method: "GET", path: cms + "?labelSelector=a%20in%20(", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid label selector on watch", method: "GET", path: cms + "?watch=true&labelSelector=!!", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid limit", method: "GET", path: cms + "?limit=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid resourceVersion list", method: "GET", path: cms + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "negative resourceVersion list", method: "GET", path: cms + "?resourceVersion=-1", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid resourceVersion get", method: "GET", path: cms + "/exists?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "invalid resourceVersion watch", method: "GET", path: cms + "?watch=true&resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "rvMatch without rv", method: "GET", path: cms + "?resourceVersionMatch=NotOlderThan", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "rvMatch exact with 0", method: "GET", path: cms + "?resourceVersionMatch=Exact&resourceVersion=0", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "rvMatch unknown", method: "GET", path: cms + "?resourceVersionMatch=Newest&resourceVersion=1", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "rvMatch with continue", method: "GET", path: cms + "?resourceVersionMatch=Exact&resourceVersion=1&continue=abc", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "sendInitialEvents on list", method: "GET", path: cms + "?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "sendInitialEvents without bookmarks", method: "GET", path: cms + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "sendInitialEvents without NotOlderThan", method: "GET", path: cms + "?watch=true&sendInitialEvents=true&allowWatchBookmarks=true", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "rvMatch on watch", method: "GET", path: cms + "?watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan", code: 422, reason: metav1.StatusReasonInvalid},
		{name: "invalid timeoutSeconds", method: "GET", path: cms + "?watch=true&timeoutSeconds=soon", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "rv with continue", method: "GET", path: cms + "?resourceVersion=5&continue=abc", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "garbage continue", method: "GET", path: cms + "?limit=1&continue=%21%21garbage", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unknown resource", method: "GET", path: "/api/v1/namespaces/default/widgets", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "unknown group", method: "GET", path: "/apis/example.com/v1/widgets", code: 404, bare: true},
		{name: "unknown path", method: "GET", path: "/nothing/here", code: 404, bare: true},
		{name: "unknown subresource", method: "GET", path: cms + "/exists/bogus", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "missing object", method: "GET", path: cms + "/missing", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "missing namespace", method: "POST", path: "/api/v1/namespaces/nowhere/configmaps", body: cm(func(map[string]any) {}), headers: []string{js}, code: 404, reason: metav1.StatusReasonNotFound},
		{name: "malformed delete options", method: "DELETE", path: cms + "/exists", body: []byte(`{"kind":`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad propagation policy", method: "DELETE", path: cms + "/exists?propagationPolicy=Sideways", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "negative grace period", method: "DELETE", path: cms + "/exists?gracePeriodSeconds=-5", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed merge patch", method: "PATCH", path: cms + "/exists", body: []byte(`{"data":`), headers: []string{"Content-Type: application/merge-patch+json"}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed json patch", method: "PATCH", path: cms + "/exists", body: []byte(`[{"op":`), headers: []string{"Content-Type: application/json-patch+json"}, code: 400, reason: metav1.StatusReasonBadRequest},
		// Upstream answers an unappliable JSON patch with a bare 422.
		{name: "unknown json patch op", method: "PATCH", path: cms + "/exists", body: []byte(`[{"op":"explode"}]`), headers: []string{"Content-Type: application/json-patch+json"}, code: 422, reason: metav1.StatusReasonInvalid, noCauses: true},
		{name: "patch renames", method: "PATCH", path: cms + "/exists", body: []byte(`{"metadata":{"name":"other"}}`), headers: []string{"Content-Type: application/merge-patch+json"}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "apply without manager", method: "PATCH", path: cms + "/exists", body: []byte(`{}`), headers: []string{"Content-Type: application/apply-patch+yaml"}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "force on merge patch", method: "PATCH", path: cms + "/exists?force=true", body: []byte(`{}`), headers: []string{"Content-Type: application/merge-patch+json"}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "scale of configmap", method: "GET", path: cms + "/exists/scale", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "binding missing pod", method: "POST", path: pods + "/missing/binding", body: []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"missing"},"target":{"name":"n1"}}`), headers: []string{js}, code: 404, reason: metav1.StatusReasonNotFound},
		{name: "binding to a non-node", method: "POST", path: pods + "/missing/binding", body: []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"missing"},"target":{"kind":"Pod","name":"x"}}`), headers: []string{js}, code: 422, reason: metav1.StatusReasonInvalid},
		{name: "binding without target", method: "POST", path: pods + "/missing/binding", body: []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"missing"}}`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "eviction malformed", method: "POST", path: pods + "/missing/eviction", body: []byte(`{`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "eviction name mismatch", method: "POST", path: pods + "/missing/eviction", body: []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}`), headers: []string{js}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "get on binding", method: "GET", path: pods + "/missing/binding", code: 405, reason: metav1.StatusReasonMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body, tc.headers...)
			if tc.bare {
				if r.code != tc.code || string(r.body) != "404 page not found\n" {
					t.Fatalf("got %d %q, want upstream's bare 404", r.code, r.body)
				}
				return
			}
			st := r.wantStatus(t, tc.code, tc.reason)
			if tc.msgContains != "" && !strings.Contains(st.Message, tc.msgContains) {
				t.Fatalf("message %q does not mention %q", st.Message, tc.msgContains)
			}
			if tc.reason == metav1.StatusReasonInvalid && !tc.noCauses && (st.Details == nil || len(st.Details.Causes) == 0) {
				t.Fatalf("422 without field causes: %s", r.body)
			}
		})
	}
	// Nothing the table sent may have been stored.
	list, err := e.cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if cm.Name != "exists" && cm.Name != "kube-root-ca.crt" {
			t.Errorf("a rejected request stored %s", cm.Name)
		}
	}
}

func TestFieldValidationWarn(t *testing.T) {
	e := newEnv(t)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"bogus":1}`)
	for _, tc := range []struct {
		query    string
		wantWarn bool
	}{
		{"", true},
		{"&fieldValidation=Warn", true},
		{"&fieldValidation=Ignore", false},
	} {
		t.Run("query="+tc.query, func(t *testing.T) {
			r := e.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All"+tc.query, body, "Content-Type: application/json")
			if r.code != 201 {
				t.Fatalf("want 201, got %d: %s", r.code, r.body)
			}
			warn := r.header.Get("Warning")
			if got := strings.Contains(warn, "bogus"); got != tc.wantWarn {
				t.Fatalf("Warning header %q, want a warning: %v", warn, tc.wantWarn)
			}
		})
	}
}
