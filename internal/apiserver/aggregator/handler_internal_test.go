package aggregator

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// routed builds an Aggregator whose routes hold one remote group version
// that is not available, so a request routed to it is answered 503
// without resolving a Service.
func routed() *Aggregator {
	a := &Aggregator{log: slog.New(slog.DiscardHandler)}
	gv := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	svc := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: 100, VersionPriority: 100,
			Service: &apiregistrationv1.ServiceReference{Namespace: "kube-system", Name: "metrics-server"}}}
	a.routes.Store(&routeTable{
		remote:       map[schema.GroupVersion]*remoteAPI{gv: {name: svc.Name, gv: gv}},
		remoteGroups: map[string][]*apiregistrationv1.APIService{gv.Group: {svc}},
		order:        []string{gv.Group},
	})
	return a
}

type countingDelegate struct{ n int }

func (d *countingDelegate) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	d.n++
	w.WriteHeader(http.StatusTeapot)
}

func TestHandlerRouting(t *testing.T) {
	cases := []struct {
		method, path string
		wantCode     int // 418: the API server's; 503: the unavailable remote; 200: the aggregator's discovery
	}{
		{"GET", "/api/v1/pods", 418},
		{"GET", "/apis/apps/v1/deployments", 418},
		{"GET", "/apisx/metrics.k8s.io/v1beta1/pods", 418},
		{"GET", "/apis/metrics.k8s.io/v1beta1/pods", 503},
		{"POST", "/apis/metrics.k8s.io/v1beta1/pods", 503},
		{"GET", "/apis/metrics.k8s.io/v1beta1", 503},
		{"GET", "/apis/metrics.k8s.io/v1beta2/pods", 418},
		{"GET", "/apis/metrics.k8s.io", 200},
		{"GET", "/apis/metrics.k8s.io/", 200},
		{"DELETE", "/apis/metrics.k8s.io", 418},
		{"GET", "/healthz", 418},
		{"GET", "/openapi/v3/apis/metrics.k8s.io/v1beta1", 503},
		{"GET", "/openapi/v3/apis/apps/v1", 418},
		{"GET", "/openapi/v3/apis/metrics.k8s.io/v1beta1/x", 418},
		{"GET", "/openapi/v2", 418},
	}
	a := routed()
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			d := &countingDelegate{}
			w := httptest.NewRecorder()
			a.Handler(d).ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d", w.Code, tc.wantCode)
			}
			if tc.wantCode == 503 && w.Body.String() != "service unavailable\n" {
				t.Errorf("body %q", w.Body.String())
			}
			if tc.wantCode == 200 {
				var g metav1.APIGroup
				if err := json.Unmarshal(w.Body.Bytes(), &g); err != nil || g.PreferredVersion.Version != "v1beta1" {
					t.Errorf("APIGroup %s (%v)", w.Body.String(), err)
				}
			}
		})
	}
}

func TestToDiscoveryV2(t *testing.T) {
	got := toDiscoveryV2(schema.GroupVersion{Group: "g", Version: "v1"}, []metav1.APIResource{
		{Name: "things/status", Kind: "Thing", Verbs: metav1.Verbs{"get"}},
		{Name: "things", SingularName: "thing", Namespaced: true, Kind: "Thing", Verbs: metav1.Verbs{"get", "list"}, ShortNames: []string{"th"}},
		{Name: "things/scale", Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: metav1.Verbs{"get"}},
		{Name: "orphans/status", Kind: "Orphan"},
		{Name: "alpha", Kind: "Alpha"},
	})
	if len(got) != 2 || got[0].Resource != "alpha" || got[1].Resource != "things" {
		t.Fatalf("resources %+v", got)
	}
	th := got[1]
	if th.Scope != "Namespaced" || th.ResponseKind.Group != "g" || len(th.Subresources) != 2 ||
		th.Subresources[1].ResponseKind.Group != "autoscaling" || th.Subresources[0].Subresource != "status" {
		t.Errorf("things %+v", th)
	}
	if got[0].Scope != "Cluster" {
		t.Errorf("alpha scope %q", got[0].Scope)
	}
}

// FuzzHandlerPath: no request path makes the router panic or reach the
// remote for another group version.
func FuzzHandlerPath(f *testing.F) {
	for _, s := range []string{"/openapi/v3", "/openapi/v3/apis/metrics.k8s.io/v1beta1", "/apis", "/apis/", "/apis/metrics.k8s.io/v1beta1/pods", "/apis//", "/apis/metrics.k8s.io//", "/api", "/apis/a/b/c/d/e", "/apis/metrics.k8s.io/v1beta1"} {
		f.Add(s)
	}
	a := routed()
	f.Fuzz(func(t *testing.T, path string) {
		r, err := http.NewRequest(http.MethodGet, "https://x", nil)
		if err != nil {
			t.Skip()
		}
		r.URL.Path = path
		w := httptest.NewRecorder()
		d := &countingDelegate{}
		a.Handler(d).ServeHTTP(w, r)
		if w.Code == 503 && !strings.HasPrefix(path, "/apis/metrics.k8s.io/v1beta1") && path != "/openapi/v3/apis/metrics.k8s.io/v1beta1" {
			t.Fatalf("%q routed to metrics.k8s.io/v1beta1", path)
		}
	})
}

// FuzzDiscoveryDecode: whatever an extension server answers to its
// discovery check, decoding and converting it neither panics nor loses
// a resource.
func FuzzDiscoveryDecode(f *testing.F) {
	f.Add([]byte(`{"kind":"APIResourceList","groupVersion":"g/v1","resources":[{"name":"a","kind":"A","namespaced":true,"verbs":["get"]},{"name":"a/status","kind":"A"}]}`))
	f.Add([]byte(`{"resources":[{"name":"/"},{"name":"a//b"},{"name":""}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var list metav1.APIResourceList
		if json.Unmarshal(data, &list) != nil {
			return
		}
		got := toDiscoveryV2(schema.GroupVersion{Group: "g", Version: "v1"}, list.APIResources)
		top := map[string]bool{}
		for _, r := range list.APIResources {
			if !containsSlash(r.Name) {
				top[r.Name] = true
			}
		}
		seen := map[string]bool{}
		for _, r := range got {
			seen[r.Resource] = true
		}
		for name := range top {
			if !seen[name] {
				t.Fatalf("resource %q lost", name)
			}
		}
	})
}

func containsSlash(s string) bool {
	for i := range len(s) {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// BenchmarkHandlerPassThrough is what the aggregation layer adds to every
// request for the server's own APIs: the routing decision.
func BenchmarkHandlerPassThrough(b *testing.B) {
	a := routed()
	h := a.Handler(&countingDelegate{})
	r := httptest.NewRequest("GET", "/apis/apps/v1/namespaces/default/deployments", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

func TestTransformsKeepWhatResolvingReads(t *testing.T) {
	ready := true
	name, port := "https", int32(8443)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}, Annotations: map[string]string{"a": "b"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}, Hostname: &name}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	out, err := endpointSliceTransform(slice)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*discoveryv1.EndpointSlice)
	if got.Labels[discoveryv1.LabelServiceName] != "svc" || got.ManagedFields != nil || got.Annotations != nil || got.Endpoints[0].Hostname != nil ||
		!*got.Endpoints[0].Conditions.Ready || got.Endpoints[0].Addresses[0] != "10.0.0.1" || *got.Ports[0].Port != 8443 {
		t.Errorf("transformed slice %+v", got)
	}
	if slice.ManagedFields == nil || slice.Endpoints[0].Hostname == nil {
		t.Error("the transform modified the shared original")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", Annotations: map[string]string{"a": "b"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}, Selector: map[string]string{"app": "x"}}}
	out, err = serviceTransform(svc)
	if err != nil {
		t.Fatal(err)
	}
	gs := out.(*corev1.Service)
	if gs.Name != "svc" || gs.Spec.Type != corev1.ServiceTypeClusterIP || gs.Spec.Ports[0].Port != 443 || gs.Spec.Selector != nil || gs.Annotations != nil {
		t.Errorf("transformed service %+v", gs)
	}
}
