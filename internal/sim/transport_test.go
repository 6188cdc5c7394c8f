package sim

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The simulator's own transport must keep what client-go's does: HTTP/2,
// the kubeconfig's CA and bearer token, the user agent.
func TestClientKeepsHTTP2AndCredentials(t *testing.T) {
	type seen struct {
		proto       int
		auth, agent string
	}
	got := make(chan seen, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- seen{r.ProtoMajor, r.Header.Get("Authorization"), r.Header.Get("User-Agent")}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	s, err := New(Config{
		RESTConfig: &rest.Config{Host: srv.URL, BearerToken: "sekret", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
		Nodes:      1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("get over the simulator's transport: %v", err)
	}
	want := seen{2, "Bearer sekret", "myriad-sim"}
	if g := <-got; g != want {
		t.Errorf("server saw %+v, want %+v", g, want)
	}
}
