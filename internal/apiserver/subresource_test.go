package apiserver

import (
	"context"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUnknownSubresource checks that a subresource a resource does not
// serve is a 404 about the path, as upstream's mux answers, and never
// "<resource> \"x\" not found" about a parent object that may well exist;
// the subresources a resource does serve still answer about the object.
func TestUnknownSubresource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.cs.CoreV1().Pods("default").Create(ctx, testPod("x", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap("cm", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const noRoute = "the server could not find the requested resource"
	cases := []struct {
		name, method, path string
		code               int
		message            string
	}{
		{"unknown subresource of an existing pod", http.MethodGet, "/api/v1/namespaces/default/pods/x/bogus", http.StatusNotFound, noRoute},
		{"unknown subresource of a missing pod", http.MethodGet, "/api/v1/namespaces/default/pods/missing/bogus", http.StatusNotFound, noRoute},
		{"put to an unknown subresource", http.MethodPut, "/api/v1/namespaces/default/pods/x/bogus", http.StatusNotFound, noRoute},
		{"scale of a pod", http.MethodGet, "/api/v1/namespaces/default/pods/x/scale", http.StatusNotFound, noRoute},
		{"status of a resource without status", http.MethodGet, "/api/v1/namespaces/default/configmaps/cm/status", http.StatusNotFound, noRoute},
		{"unknown subresource of a cluster-scoped resource", http.MethodGet, "/api/v1/nodes/n/bogus", http.StatusNotFound, noRoute},
		{"unknown resource", http.MethodGet, "/api/v1/namespaces/default/bogus", http.StatusNotFound, noRoute},
		{"unknown subresource of a group resource", http.MethodGet, "/apis/apps/v1/namespaces/default/deployments/d/bogus", http.StatusNotFound, noRoute},
		{"served subresource of a missing pod", http.MethodGet, "/api/v1/namespaces/default/pods/missing/status", http.StatusNotFound, `pods "missing" not found`},
		{"served subresource of an existing pod", http.MethodGet, "/api/v1/namespaces/default/pods/x/status", http.StatusOK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.method == http.MethodPut {
				body = []byte(`{}`)
			}
			r := e.do(tc.method, tc.path, body, "Content-Type: application/json")
			if tc.code == http.StatusOK {
				if r.code != http.StatusOK {
					t.Fatalf("got %d: %s", r.code, r.body)
				}
				return
			}
			st := r.wantStatus(t, tc.code, metav1.StatusReasonNotFound)
			if st.Message != tc.message {
				t.Errorf("message %q, want %q", st.Message, tc.message)
			}
		})
	}
}
