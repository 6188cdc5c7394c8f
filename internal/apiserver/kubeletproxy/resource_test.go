package kubeletproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/kubeletclient"
)

// objects is an in-memory object table (the API server's caches in
// production), for locations the API's validation would not let a test
// create: endpoints on loopback.
type objects struct {
	services  map[string]*corev1.Service
	endpoints map[string]*corev1.Endpoints
}

func notFound(res, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: res}, name)
}

func (o objects) Pod(_ context.Context, _, name string) (*corev1.Pod, error) {
	return nil, notFound("pods", name)
}
func (o objects) Node(_ context.Context, name string) (*corev1.Node, error) {
	return nil, notFound("nodes", name)
}
func (o objects) Service(_ context.Context, _, name string) (*corev1.Service, error) {
	if s, ok := o.services[name]; ok {
		return s, nil
	}
	return nil, notFound("services", name)
}
func (o objects) Endpoints(_ context.Context, _, name string) (*corev1.Endpoints, error) {
	if e, ok := o.endpoints[name]; ok {
		return e, nil
	}
	return nil, notFound("endpoints", name)
}

func writeStatus(w http.ResponseWriter, _ *http.Request, err error) {
	st := apierrors.APIStatus(apierrors.NewInternalError(err))
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s
	}
	w.WriteHeader(int(st.Status().Code))
	_ = json.NewEncoder(w).Encode(st.Status())
}

func TestServiceProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend %s %s", r.Method, r.URL.RequestURI())
	}))
	defer backend.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	port, _ := strconv.Atoi(portStr)

	client, err := kubeletclient.New(kubeletclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	objs := objects{
		services: map[string]*corev1.Service{"web": {Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}},
		endpoints: map[string]*corev1.Endpoints{"web": {Subsets: []corev1.EndpointSubset{
			{Ports: []corev1.EndpointPort{{Name: "http", Port: 1}}}, // no ready address: skipped
			{Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: int32(port)}}},
		}}},
	}
	for _, allow := range []bool{true, false} {
		p, err := New(Config{Kubelets: client, Objects: objs, WriteError: writeStatus, AllowLoopback: allow})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ id, path, want string }{
			{"web:80", "/x", "backend GET /x?q=1"},
			{"web:http", "/y/", "backend GET /y/?q=1"},
			{"http:web:80", "/", "backend GET /?q=1"},
			// No path below proxy: upstream redirects to the path with
			// a slash, so that relative links resolve below it.
			{"web:80", "", "redirect"},
		} {
			rec := httptest.NewRecorder()
			p.ServiceProxy(rec, httptest.NewRequest("GET", "/ignored?q=1", nil), "default", tc.id, tc.path)
			if !allow {
				if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "no endpoints available") {
					t.Fatalf("loopback endpoint without AllowLoopback: %d %s", rec.Code, rec.Body)
				}
				continue
			}
			if tc.want == "redirect" {
				if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ignored/?q=1" {
					t.Fatalf("empty path: %d %v", rec.Code, rec.Header())
				}
				continue
			}
			if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
				t.Fatalf("%s%s: %d %q, want %q", tc.id, tc.path, rec.Code, rec.Body, tc.want)
			}
		}
	}
}
