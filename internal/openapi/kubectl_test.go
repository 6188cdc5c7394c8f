package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubectlExplain runs the real kubectl explain against the handler,
// behind a minimal legacy discovery (what the API server serves itself).
// Skipped where kubectl is not installed.
func TestKubectlExplain(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not in PATH")
	}
	o := newForTest(t)
	mux := http.NewServeMux()
	mux.Handle("/openapi/", o.Handler())
	serveDiscovery(mux, o.cfg.Resources)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, tc := range []struct{ field, output, want string }{
		{"pods.spec.containers", "plaintext", "FIELD: containers <[]Container>"},
		{"deployments.spec.template.spec", "plaintext", "FIELD: spec <PodSpec>"},
		{"clusterroles.rules", "plaintext", "FIELD: rules <[]PolicyRule>"},
		// The v2 document, as kubectl's fallback reads it.
		{"pods.spec.containers", "plaintext-openapiv2", "RESOURCE: containers <[]Object>"},
	} {
		t.Run(tc.field+"/"+tc.output, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, kubectl, "explain", tc.field, "--output", tc.output, "--server", srv.URL,
				"--kubeconfig", "/dev/null", "--cache-dir", t.TempDir()).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl explain %s: %v\n%s", tc.field, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("kubectl explain %s lacks %q:\n%s", tc.field, tc.want, out)
			}
		})
	}
}

// serveDiscovery answers /api, /apis and each group-version's resource list.
func serveDiscovery(mux *http.ServeMux, resources []Resource) {
	lists := map[string]*metav1.APIResourceList{}
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, r := range resources {
		gv := r.GroupVersionKind.GroupVersion()
		key := "/" + gvPath(gv)
		l, ok := lists[key]
		if !ok {
			l = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			lists[key] = l
			if gv.Group != "" {
				v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
				groups.Groups = append(groups.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
			}
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.Resource, Namespaced: r.Namespaced, Kind: r.GroupVersionKind.Kind, Verbs: r.Verbs,
		})
	}
	write := func(v interface{}) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	mux.Handle("/api", write(&metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}))
	mux.Handle("/apis", write(groups))
	for path, l := range lists {
		mux.Handle(path, write(l))
	}
}
