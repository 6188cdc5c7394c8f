package aggregator_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/myriad-k8s/myriad/internal/apiserver/aggregator"
	"github.com/myriad-k8s/myriad/internal/controlplane"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// server is a Myriad control plane run in-process.
type server struct {
	dataDir string
	rest    *rest.Config
	kube    *kubernetes.Clientset
	agg     *aggregatorclient.Clientset
}

func startServer(t testing.TB) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := controlplane.Config{DataDir: t.TempDir(), SecurePort: port, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, cfg, ready) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("control plane exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("control plane not ready after 60 s")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 1000, 1000
	return &server{dataDir: cfg.DataDir, rest: rc, kube: kubernetes.NewForConfigOrDie(rc), agg: aggregatorclient.NewForConfigOrDie(rc)}
}

// extension is an extension API server written for the test: it serves
// wardle.example.com/v1alpha1 flunders, requires a client certificate
// from the front-proxy CA, and records the front-proxy headers it saw.
type extension struct {
	srv      *httptest.Server
	caPEM    []byte
	failDisc atomic.Bool
	mu       sync.Mutex
	seen     []http.Header
	cns      []string
}

const (
	group   = "wardle.example.com"
	version = "v1alpha1"
)

func startExtension(t testing.TB, frontProxyCA []byte) *extension {
	t.Helper()
	caPEM, cert := serviceCert(t, "wardle.default.svc")
	e := &extension{caPEM: caPEM}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(frontProxyCA) {
		t.Fatal("no front-proxy CA")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/"+group+"/"+version, func(w http.ResponseWriter, r *http.Request) {
		if e.failDisc.Load() {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		writeJSON(w, &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: group + "/" + version,
			APIResources: []metav1.APIResource{
				{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get", "list", "watch"}, ShortNames: []string{"fl"}},
				{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get"}},
			}})
	})
	mux.HandleFunc("/apis/"+group+"/"+version+"/namespaces/default/flunders", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Header.Clone())
		e.cns = append(e.cns, r.TLS.PeerCertificates[0].Subject.CommonName)
		e.mu.Unlock()
		if r.URL.Query().Get("watch") == "true" {
			// One event, then hold the stream open: the client must see
			// the event before the stream ends.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"type":"ADDED","object":{"apiVersion":"%s/%s","kind":"Flunder","metadata":{"name":"first","namespace":"default","resourceVersion":"2"}}}`+"\n", group, version)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		writeJSON(w, map[string]any{"apiVersion": group + "/" + version, "kind": "FlunderList", "metadata": map[string]any{"resourceVersion": "1"},
			"items": []any{map[string]any{"apiVersion": group + "/" + version, "kind": "Flunder", "metadata": map[string]any{"name": "first", "namespace": "default"}}}})
	})
	mux.HandleFunc("/openapi/v3", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"paths": map[string]any{"apis/" + group + "/" + version: map[string]string{"serverRelativeURL": "/openapi/v3/apis/" + group + "/" + version + "?hash=1"}}})
	})
	mux.HandleFunc("/openapi/v3/apis/"+group+"/"+version, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"openapi": "3.0.0", "info": map[string]string{"title": "wardle", "version": "1"},
			"components": map[string]any{"schemas": map[string]any{"com.example.wardle.v1alpha1.Flunder": map[string]string{"type": "object"}}}})
	})
	mux.HandleFunc("/apis/"+group+"/"+version+"/namespaces/default/flunders/first/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://example.com/elsewhere", http.StatusFound)
	})
	// An upgrade: 101, then echo what the client writes.
	mux.HandleFunc("/apis/"+group+"/"+version+"/namespaces/default/flunders/first/echo", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" || r.Header.Get("X-Remote-User") == "" {
			http.Error(w, "want an echo upgrade from the front proxy", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	})
	e.srv = httptest.NewUnstartedServer(mux)
	e.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	e.srv.StartTLS()
	t.Cleanup(e.srv.Close)
	return e
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (e *extension) lastHeaders() (http.Header, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) == 0 {
		return nil, ""
	}
	return e.seen[len(e.seen)-1], e.cns[len(e.cns)-1]
}

func (e *extension) port() int32 { return int32(e.srv.Listener.Addr().(*net.TCPAddr).Port) }

// serviceCert makes a CA and a serving certificate for dnsName.
func serviceCert(t testing.TB, dnsName string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wardle-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// register creates the Service, its EndpointSlice (pointing at the
// extension on loopback) and the APIService.
func register(t testing.TB, s *server, e *extension) {
	t.Helper()
	ctx := context.Background()
	_, err := s.kube.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wardle"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(e.port())}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createSlice(t, s, e)
	_, err = s.agg.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: 1000, VersionPriority: 15, CABundle: e.caPEM,
			Service: &apiregistrationv1.ServiceReference{Namespace: "default", Name: "wardle"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func createSlice(t testing.TB, s *server, e *extension) {
	t.Helper()
	name, port, ready := "https", e.port(), true
	_, err := s.kube.DiscoveryV1().EndpointSlices("default").Create(context.Background(), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "wardle-1", Labels: map[string]string{discoveryv1.LabelServiceName: "wardle"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// waitCondition waits until the APIService's Available condition has
// status and reason.
func waitCondition(t testing.TB, s *server, name string, status apiregistrationv1.ConditionStatus, reason string) *apiregistrationv1.APIServiceCondition {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last *apiregistrationv1.APIService
	for time.Now().Before(deadline) {
		a, err := s.agg.ApiregistrationV1().APIServices().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = a
			for _, c := range a.Status.Conditions {
				if c.Type == apiregistrationv1.Available && c.Status == status && c.Reason == reason {
					return &c
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("APIService %s never became Available=%s (%s); last: %+v", name, status, reason, last.Status)
	return nil
}

func frontProxyCA(t testing.TB, s *server) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dataDir, pki.FrontProxyCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAggregatedAPI(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()

	// Built-in group versions are Local APIServices, available at once.
	local, err := s.agg.ApiregistrationV1().APIServices().Get(ctx, "v1.apps", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if local.Spec.Service != nil || local.Spec.GroupPriorityMinimum != 17800 || len(local.Status.Conditions) == 0 || local.Status.Conditions[0].Reason != "Local" {
		t.Errorf("v1.apps: %+v", local)
	}
	if _, err := s.agg.ApiregistrationV1().APIServices().Get(ctx, "v1.", metav1.GetOptions{}); err != nil {
		t.Errorf("the core group's APIService v1.: %v", err)
	}

	// The ConfigMap extension servers read their trust from.
	cm, err := s.kube.CoreV1().ConfigMaps("kube-system").Get(ctx, aggregator.AuthenticationConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fpCA := frontProxyCA(t, s)
	if cm.Data["requestheader-client-ca-file"] != string(fpCA) || cm.Data["requestheader-allowed-names"] != `["front-proxy-client"]` ||
		cm.Data["requestheader-username-headers"] != `["X-Remote-User"]` || cm.Data["requestheader-group-headers"] != `["X-Remote-Group"]` ||
		cm.Data["requestheader-extra-headers-prefix"] != `["X-Remote-Extra-"]` || cm.Data["client-ca-file"] == "" {
		t.Errorf("extension-apiserver-authentication: %v", cm.Data)
	}

	e := startExtension(t, fpCA)
	register(t, s, e)
	name := version + "." + group
	waitCondition(t, s, name, apiregistrationv1.ConditionTrue, "Passed")

	// A list through the aggregator reaches the extension with the
	// front-proxy certificate and the caller's identity.
	rc := rest.CopyConfig(s.rest)
	rc.GroupVersion = &schemaGV
	rc.APIPath = "/apis"
	rc.NegotiatedSerializer = clientNegotiator()
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	body, err := client.Get().AbsPath("/apis", group, version, "namespaces", "default", "flunders").DoRaw(ctx)
	if err != nil {
		t.Fatalf("list through the aggregator: %v", err)
	}
	if !strings.Contains(string(body), `"FlunderList"`) {
		t.Errorf("list answered %s", body)
	}
	h, cn := e.lastHeaders()
	if cn != pki.FrontProxyClientUser {
		t.Errorf("extension saw client certificate %q, want %q", cn, pki.FrontProxyClientUser)
	}
	if h.Get("X-Remote-User") != "system:admin" || !contains(h.Values("X-Remote-Group"), "system:masters") || h.Get("Authorization") != "" {
		t.Errorf("front-proxy headers: user %q groups %q authorization %q", h.Get("X-Remote-User"), h.Values("X-Remote-Group"), h.Get("Authorization"))
	}

	// A client cannot assert another identity through the headers.
	req, _ := http.NewRequest(http.MethodGet, s.rest.Host+"/apis/"+group+"/"+version+"/namespaces/default/flunders", nil)
	req.Header.Set("X-Remote-User", "mallory")
	req.Header.Set("X-Remote-Group", "system:masters")
	resp, err := httpClient(t, s).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h, _ := e.lastHeaders(); h.Get("X-Remote-User") != "system:admin" || len(h.Values("X-Remote-User")) != 1 {
		t.Errorf("forged X-Remote-User reached the extension: %q", h.Values("X-Remote-User"))
	}

	// A watch streams through: the first event arrives while the
	// extension still holds the stream open.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	stream, err := client.Get().AbsPath("/apis", group, version, "namespaces", "default", "flunders").Param("watch", "true").Stream(wctx)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	line, err := bufio.NewReader(stream).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ADDED"`) {
		t.Errorf("first watch event: %q, %v", line, err)
	}
	stream.Close()
	cancel()

	// An extension's redirect is not forwarded (upstream's default).
	if code, text := rawGet(t, s, "/apis/"+group+"/"+version+"/namespaces/default/flunders/first/redirect"); code != http.StatusBadGateway ||
		text != "the backend attempted to redirect this request, which is not permitted" {
		t.Errorf("redirect through the aggregator: %d %q", code, text)
	}

	// An upgraded connection passes through both ways.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.rest.Host, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /apis/%s/%s/namespaces/default/flunders/first/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
		group, version, s.rest.BearerToken)
	br := bufio.NewReader(conn)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the aggregator: %v %+v", err, resp)
	}
	fmt.Fprint(conn, "ping\n")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if echoed, err := br.ReadString('\n'); err != nil || echoed != "ping\n" {
		t.Errorf("echo over the upgraded connection: %q %v", echoed, err)
	}
	conn.Close()

	// Discovery: aggregated (kubectl's) and the legacy documents.
	dc := discovery.NewDiscoveryClientForConfigOrDie(s.rest)
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	found := false
	for _, l := range lists {
		if l.GroupVersion == group+"/"+version {
			for _, r := range l.APIResources {
				found = found || (r.Name == "flunders" && r.Kind == "Flunder" && r.Namespaced)
			}
		}
	}
	if !found {
		t.Errorf("aggregated discovery does not list flunders")
	}
	var groups metav1.APIGroupList
	raw, err := client.Get().AbsPath("/apis").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil || json.Unmarshal(raw, &groups) != nil {
		t.Fatalf("/apis: %v %s", err, raw)
	}
	if !hasGroup(groups, group) || !hasGroup(groups, "apps") {
		t.Errorf("/apis lacks %s or apps: %s", group, raw)
	}
	// HEAD /apis answers like GET, without the body.
	if resp, err := httpClient(t, s).Head(s.rest.Host + "/apis"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /apis: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	var grp metav1.APIGroup
	raw, err = client.Get().AbsPath("/apis", group).DoRaw(ctx)
	if err != nil || json.Unmarshal(raw, &grp) != nil || grp.PreferredVersion.Version != version {
		t.Errorf("/apis/%s: %v %s", group, err, raw)
	}

	// OpenAPI v3: listed, and fetched from the extension.
	var v3 struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	raw, err = client.Get().AbsPath("/openapi/v3").DoRaw(ctx)
	if err != nil || json.Unmarshal(raw, &v3) != nil {
		t.Fatalf("/openapi/v3: %v %s", err, raw)
	}
	entry, ok := v3.Paths["apis/"+group+"/"+version]
	if _, apps := v3.Paths["apis/apps/v1"]; !ok || !apps {
		t.Errorf("/openapi/v3 lacks the aggregated or a local group version: %s", raw)
	}
	raw, err = client.Get().AbsPath(entry.ServerRelativeURL).DoRaw(ctx)
	if err != nil || !strings.Contains(string(raw), "com.example.wardle.v1alpha1.Flunder") {
		t.Errorf("%s: %v %s", entry.ServerRelativeURL, err, raw)
	}

	// Availability follows the Service: no EndpointSlice, no API (503
	// with upstream's body).
	if err := s.kube.DiscoveryV1().EndpointSlices("default").Delete(ctx, "wardle-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, s, name, apiregistrationv1.ConditionFalse, "EndpointsNotFound")
	if c.Message != `cannot find endpointslices for service/wardle in "default"` {
		t.Errorf("EndpointsNotFound message %q", c.Message)
	}
	status, text := rawGet(t, s, "/apis/"+group+"/"+version+"/namespaces/default/flunders")
	if status != http.StatusServiceUnavailable || text != "service unavailable\n" {
		t.Errorf("unavailable APIService answered %d %q, want 503 \"service unavailable\"", status, text)
	}
	if v := metricValue(t, s, `aggregator_unavailable_apiservice{name="`+name+`"}`); v != "1" {
		t.Errorf("aggregator_unavailable_apiservice for %s = %q, want 1", name, v)
	}

	// Back, then a failing discovery endpoint.
	createSlice(t, s, e)
	waitCondition(t, s, name, apiregistrationv1.ConditionTrue, "Passed")
	e.failDisc.Store(true)
	svc, err := s.kube.CoreV1().Services("default").Get(ctx, "wardle", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Labels = map[string]string{"touched": "yes"} // a change makes the checks run now
	if _, err := s.kube.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c = waitCondition(t, s, name, apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck")
	if !strings.HasPrefix(c.Message, "bad status from https://127.0.0.1:") || !strings.HasSuffix(c.Message, "/apis/"+group+"/"+version+": 500") {
		t.Errorf("FailedDiscoveryCheck message %q", c.Message)
	}

	// The Service gone: ServiceNotFound.
	if err := s.kube.CoreV1().Services("default").Delete(ctx, "wardle", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c = waitCondition(t, s, name, apiregistrationv1.ConditionFalse, "ServiceNotFound")
	if c.Message != `service/wardle in "default" is not present` {
		t.Errorf("ServiceNotFound message %q", c.Message)
	}

	// Deleting the APIService removes the API.
	if err := s.agg.ApiregistrationV1().APIServices().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _ := rawGet(t, s, "/apis/"+group+"/"+version+"/namespaces/default/flunders")
		if status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after deleting the APIService the API answers %d, want 404", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAPIServiceValidationThroughServer(t *testing.T) {
	s := startServer(t)
	_, err := s.agg.ApiregistrationV1().APIServices().Create(context.Background(), &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "wrong"},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: 1000, VersionPriority: 15}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "must be `spec.version+\".\"+spec.group`") {
		t.Fatalf("create with a wrong name: %v", err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func hasGroup(l metav1.APIGroupList, name string) bool {
	for _, g := range l.Groups {
		if g.Name == name {
			return true
		}
	}
	return false
}
