package apiextensions

import (
	"bytes"
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
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// testCA signs a serving certificate for 127.0.0.1 and the service name
// conv.ns.svc; the webhook is only trusted through the CRD's caBundle.
func testCA(t testing.TB) (caPEM []byte, serving tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "conv"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"conv.ns.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// testWebhook is a conversion webhook written as a user would: it decodes the
// ConversionReview, converts between v1 (spec.color) and v2
// (spec.colour), and answers; mode makes it misbehave.
type testWebhook struct {
	mu       sync.Mutex
	mode     string
	body     []byte // mode "raw": answered as is, {{UID}} replaced
	requests []map[string]interface{}
}

func (w *testWebhook) setMode(mode string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mode = mode
}

func (w *testWebhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	mode, raw := w.mode, w.body
	w.mu.Unlock()
	var review map[string]interface{}
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.requests = append(w.requests, review)
	w.mu.Unlock()
	req := review["request"].(map[string]interface{})
	switch mode {
	case "hang":
		<-r.Context().Done()
		return
	case "500":
		http.Error(rw, "boom", http.StatusInternalServerError)
		return
	case "garbage":
		_, _ = io.WriteString(rw, "this is not a ConversionReview")
		return
	case "raw":
		_, _ = rw.Write(bytes.ReplaceAll(raw, []byte("{{UID}}"), []byte(req["uid"].(string))))
		return
	}
	desired := req["desiredAPIVersion"].(string)
	var converted []interface{}
	for _, o := range req["objects"].([]interface{}) {
		u := &unstructured.Unstructured{Object: o.(map[string]interface{})}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		if strings.HasSuffix(desired, "/v2") {
			if c, ok := spec["color"]; ok {
				spec["colour"] = c
				delete(spec, "color")
			}
		} else if c, ok := spec["colour"]; ok {
			spec["color"] = c
			delete(spec, "colour")
		}
		_ = unstructured.SetNestedMap(u.Object, spec, "spec")
		u.SetAPIVersion(desired)
		u.SetLabels(map[string]string{"converted": "yes"})
		switch mode {
		case "uid":
			u.SetUID("changed")
		case "name":
			u.SetName("other")
		case "kind":
			u.SetKind("Gadget")
		case "badlabel":
			u.SetLabels(map[string]string{"bad label": "x"})
		}
		converted = append(converted, u.Object)
	}
	if mode == "count" {
		converted = converted[:len(converted)-1]
	}
	uid := req["uid"]
	if mode == "wronguid" {
		uid = "not-the-request"
	}
	resp := map[string]interface{}{"uid": uid, "convertedObjects": converted, "result": map[string]interface{}{"status": "Success"}}
	if mode == "fail" {
		resp["result"] = map[string]interface{}{"status": "Failure", "message": "cannot convert widgets today"}
		resp["convertedObjects"] = nil
	}
	_ = json.NewEncoder(rw).Encode(map[string]interface{}{"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": resp})
}

func startWebhook(t testing.TB) (*testWebhook, *httptest.Server, []byte) {
	t.Helper()
	caPEM, cert := testCA(t)
	w := &testWebhook{}
	ts := httptest.NewUnstartedServer(w)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return w, ts, caPEM
}

func webhookCRD(t testing.TB, url string, caPEM []byte) *apiextensionsv1.CustomResourceDefinition {
	crd := widgetCRD(t)
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			ConversionReviewVersions: []string{"v1"},
		},
	}
	return crd
}

func widget(t testing.TB, name, version string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/`+version+`","kind":"Widget",
		"metadata":{"name":"`+name+`","namespace":"default","uid":"uid-`+name+`","resourceVersion":"5","labels":{"app":"x"}},
		"spec":{"color":"red","replicas":1}}`)}
}

var v2 = schema.GroupVersion{Group: "example.com", Version: "v2"}

func TestConvertWebhook(t *testing.T) {
	hook, ts, caPEM := startWebhook(t)
	conv, err := NewConverter(webhookCRD(t, ts.URL+"/convert", caPEM), ConverterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Several objects go in one review; the one already at v2 is not sent.
	in := []*unstructured.Unstructured{widget(t, "a", "v1"), widget(t, "b", "v2"), widget(t, "c", "v1")}
	out, err := conv.Convert(ctx, in, v2)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("got %d objects", len(out))
	}
	for i, o := range out {
		if o.GetAPIVersion() != "example.com/v2" || o.GetName() != in[i].GetName() || o.GetUID() != in[i].GetUID() || o.GetResourceVersion() != "5" {
			t.Errorf("object %d: %v", i, o.Object)
		}
	}
	if c, _, _ := unstructured.NestedString(out[0].Object, "spec", "colour"); c != "red" {
		t.Errorf("webhook's conversion lost: %v", out[0].Object)
	}
	if out[0].GetLabels()["converted"] != "yes" {
		t.Errorf("labels the webhook set were dropped: %v", out[0].GetLabels())
	}
	hook.mu.Lock()
	reqs := hook.requests
	hook.mu.Unlock()
	if len(reqs) != 1 {
		t.Fatalf("webhook called %d times, want once", len(reqs))
	}
	if reqs[0]["apiVersion"] != "apiextensions.k8s.io/v1" || len(reqs[0]["request"].(map[string]interface{})["objects"].([]interface{})) != 2 {
		t.Errorf("review sent: %v", reqs[0])
	}

	// One object, and objects already at the target are not sent at all.
	out, err = conv.Convert(ctx, []*unstructured.Unstructured{widget(t, "d", "v2")}, v2)
	if err != nil || len(out) != 1 || out[0].GetName() != "d" {
		t.Fatalf("already converted: %v %v", out, err)
	}
	hook.mu.Lock()
	calls := len(hook.requests)
	hook.mu.Unlock()
	if calls != 1 {
		t.Error("an object already at the target version was sent")
	}
}

func TestConvertWebhookErrors(t *testing.T) {
	hook, ts, caPEM := startWebhook(t)
	conv, err := NewConverter(webhookCRD(t, ts.URL+"/convert", caPEM), ConverterOptions{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode string
		n    int // objects sent
		want string
	}{
		{mode: "fail", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget failed: cannot convert widgets today"},
		{mode: "garbage", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget failed: "},
		{mode: "500", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget failed: an error on the server (\"boom\") has prevented the request from succeeding"},
		{mode: "wronguid", n: 1, want: `conversion webhook for example.com/v1, Kind=Widget failed: expected response.uid=`},
		{mode: "uid", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same UID: uid-w0 != changed"},
		{mode: "name", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: w0 != other"},
		{mode: "kind", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid kind (expected Widget, received Gadget)"},
		{mode: "uid", n: 2, want: "conversion webhook for example.com/v2, Kind=WidgetList returned invalid converted object at index 0: must have the same UID: uid-w0 != changed"},
		{mode: "count", n: 2, want: "conversion webhook for example.com/v2, Kind=WidgetList returned 1 objects, expected 2"},
		{mode: "badlabel", n: 1, want: `conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: metadata.labels: Invalid value: "bad label"`},
		{mode: "hang", n: 1, want: "conversion webhook for example.com/v1, Kind=Widget failed: "},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			hook.setMode(tc.mode)
			var in []*unstructured.Unstructured
			for i := 0; i < tc.n; i++ {
				in = append(in, widget(t, "w"+string(rune('0'+i)), "v1"))
			}
			start := time.Now()
			out, err := conv.Convert(context.Background(), in, v2)
			if err == nil {
				t.Fatalf("converted: %v", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestConvertWebhookCancel: a cancelled request does not wait for a
// hanging webhook.
func TestConvertWebhookCancel(t *testing.T) {
	hook, ts, caPEM := startWebhook(t)
	hook.setMode("hang")
	conv, err := NewConverter(webhookCRD(t, ts.URL+"/convert", caPEM), ConverterOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := conv.Convert(ctx, []*unstructured.Unstructured{widget(t, "a", "v1")}, v2); err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("Convert: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancelled conversion took %v", d)
	}
}

func TestConvertWebhookUntrusted(t *testing.T) {
	_, ts, _ := startWebhook(t)
	otherCA, _ := testCA(t)
	conv, err := NewConverter(webhookCRD(t, ts.URL+"/convert", otherCA), ConverterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conv.Convert(context.Background(), []*unstructured.Unstructured{widget(t, "a", "v1")}, v2)
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Errorf("webhook with a certificate the caBundle does not sign: %v", err)
	}
}

// TestConvertWebhookService reaches the webhook by service reference,
// through ResolveService, verifying the certificate for the service name;
// and speaks ConversionReview v1beta1 when that is all the CRD lists.
func TestConvertWebhookService(t *testing.T) {
	hook, ts, caPEM := startWebhook(t)
	crd := webhookCRD(t, "", caPEM)
	path := "/convert"
	crd.Spec.Conversion.Webhook.ClientConfig.URL = nil
	crd.Spec.Conversion.Webhook.ClientConfig.Service = &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "conv", Path: &path, Port: ptr(int32(8443))}
	crd.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1beta1"}
	var resolved []string
	conv, err := NewConverter(crd, ConverterOptions{ResolveService: func(ctx context.Context, namespace, name string, port int32) (string, error) {
		resolved = append(resolved, fmt.Sprintf("%s/%s:%d", namespace, name, port))
		return ts.Listener.Addr().String(), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := conv.Convert(context.Background(), []*unstructured.Unstructured{widget(t, "a", "v1")}, v2)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(out[0].Object, "spec", "colour"); c != "red" {
		t.Errorf("converted: %v", out[0].Object)
	}
	if len(resolved) == 0 || resolved[0] != "ns/conv:8443" {
		t.Errorf("resolved %v", resolved)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if got := hook.requests[0]["apiVersion"]; got != "apiextensions.k8s.io/v1beta1" {
		t.Errorf("review version %v", got)
	}
}

func TestConvertNone(t *testing.T) {
	crd := widgetCRD(t)
	conv, err := NewConverter(crd, ConverterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := conv.Convert(context.Background(), []*unstructured.Unstructured{widget(t, "a", "v1"), widget(t, "b", "v2")}, v2)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.GetAPIVersion() != "example.com/v2" {
			t.Errorf("apiVersion %s", o.GetAPIVersion())
		}
		if c, _, _ := unstructured.NestedString(o.Object, "spec", "color"); c != "red" {
			t.Errorf("None changed the object: %v", o.Object)
		}
	}
	if _, err := conv.Convert(context.Background(), []*unstructured.Unstructured{widget(t, "a", "v1")}, schema.GroupVersion{Group: "example.com", Version: "v9"}); err == nil ||
		err.Error() != "request to convert CR to an invalid group/version: example.com/v9" {
		t.Errorf("conversion to an unknown version: %v", err)
	}
}

// FuzzConversionResponse feeds arbitrary webhook answers to the converter:
// it must return an error or well-formed objects, never panic or hang.
func FuzzConversionResponse(f *testing.F) {
	hook, ts, caPEM := startWebhook(f)
	hook.setMode("raw")
	conv, err := NewConverter(webhookCRD(f, ts.URL+"/convert", caPEM), ConverterOptions{Timeout: 2 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	ok := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"{{UID}}","result":{"status":"Success"},"convertedObjects":[
		{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"a","namespace":"default","uid":"uid-a"}},
		{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"b","namespace":"default","uid":"uid-b"}}]}}`
	for _, seed := range []string{
		ok,
		`{}`, `null`, `[]`, `{"response":null}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"{{UID}}","result":{"status":"Success"},"convertedObjects":[1,"x"]}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"{{UID}}","result":{"status":"Success"},"convertedObjects":[{"apiVersion":"example.com/v2","kind":"Widget","metadata":5},{}]}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"{{UID}}","result":{"status":"Success"},"convertedObjects":[{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"a","namespace":"default","uid":"uid-a","labels":{"a":1}}},{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"b","namespace":"default","uid":"uid-b","annotations":[]}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		hook.mu.Lock()
		hook.body = body
		hook.requests = nil
		hook.mu.Unlock()
		in := []*unstructured.Unstructured{widget(t, "a", "v1"), widget(t, "b", "v1")}
		start := time.Now()
		out, err := conv.Convert(context.Background(), in, v2)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("conversion took %v past its 2s timeout (%v)", d, err)
		}
		if err != nil {
			return
		}
		if len(out) != 2 {
			t.Fatalf("%d objects without an error", len(out))
		}
		for i, o := range out {
			if o.GetAPIVersion() != "example.com/v2" || o.GetUID() != in[i].GetUID() || o.GetName() != in[i].GetName() {
				t.Fatalf("object %d accepted: %v", i, o.Object)
			}
		}
	})
}
