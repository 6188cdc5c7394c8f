package apiserver

import (
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
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// hookServer is an admission webhook served over TLS by httptest: answer
// decides each review (nil: allow). It counts the reviews it got per path.
type hookServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]*admissionv1.AdmissionRequest
}

func newHookServer(t testing.TB, answer func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *hookServer {
	t.Helper()
	h := &hookServer{got: map[string][]*admissionv1.AdmissionRequest{}}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got[r.URL.Path] = append(h.got[r.URL.Path], review.Request)
		h.mu.Unlock()
		var resp *admissionv1.AdmissionResponse
		if answer != nil {
			resp = answer(r.URL.Path, review.Request)
		}
		if resp == nil {
			resp = &admissionv1.AdmissionResponse{Allowed: true}
		}
		resp.UID = review.Request.UID
		review.Response = resp
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) calls(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got[path])
}

func (h *hookServer) last(path string) *admissionv1.AdmissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.got[path]); n > 0 {
		return h.got[path][n-1]
	}
	return nil
}

// caBundle is the PEM of the server's certificate, which httptest signs
// itself.
func (h *hookServer) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
}

func (h *hookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	u := h.srv.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: h.caBundle()}
}

// configMapRule matches CREATE and UPDATE of configmaps.
func configMapRule(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	if len(ops) == 0 {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	}
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
}

func validatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name, ClientConfig: cc, Rules: rules,
		SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
	}
}

func mutatingHook(name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: name, ClientConfig: cc, Rules: rules,
		SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
	}
}

func (e *testEnv) createValidatingHooks(name string, hooks ...admissionregistrationv1.ValidatingWebhook) {
	e.t.Helper()
	_, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(),
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating validating webhook configuration %s: %v", name, err)
	}
}

func (e *testEnv) createMutatingHooks(name string, hooks ...admissionregistrationv1.MutatingWebhook) {
	e.t.Helper()
	_, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(),
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating mutating webhook configuration %s: %v", name, err)
	}
}

func configMap(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
}

// untilEffective creates probe ConfigMaps (dry run) until effective says
// the new configuration acts on them, and fails after five seconds (the
// brief is one).
func untilEffective(t *testing.T, cs kubernetes.Interface, ns string, effective func(err error) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(ns, fmt.Sprintf("probe-%d", i), nil),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if effective(err) {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("configuration not effective after %v (last: %v)", time.Since(start), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestValidatingWebhookDenies(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, withConfig(func(c *Config) { c.Metrics = reg }))
	hook := newHookServer(t, func(_ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if strings.HasPrefix(req.Name, "bad-") || strings.HasPrefix(req.Name, "probe-") {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "names starting with bad- are refused", Code: 403}}
		}
		return nil
	})
	e.createValidatingHooks("deny", validatingHook("deny.myriad.test", hook.clientConfig("/deny"), configMapRule()))
	took := untilEffective(t, e.cs, "default", func(err error) bool { return apierrors.IsForbidden(err) })
	if took > time.Second {
		t.Errorf("a new webhook configuration took %v to act, want within a second", took)
	}
	_, err := e.cs.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "bad-one", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "deny.myriad.test" denied the request: names starting with bad- are refused`) {
		t.Fatalf("create bad-one: got %v, want the webhook's 403", err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "good", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create good: %v", err)
	}
	req := hook.last("/deny")
	if req.Operation != admissionv1.Create || req.Name != "good" || req.Namespace != "default" ||
		req.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}) || len(req.Object.Raw) == 0 {
		t.Errorf("review request: %+v", req)
	}
	var sent corev1.ConfigMap
	if err := json.Unmarshal(req.Object.Raw, &sent); err != nil || sent.Kind != "ConfigMap" || sent.APIVersion != "v1" || sent.Data["k"] != "v" {
		t.Errorf("review object %s (err %v): want the ConfigMap with apiVersion and kind", req.Object.Raw, err)
	}
	// Upstream's metrics, under upstream's names, on this server's registry.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == "deny.myriad.test" {
					seen[f.GetName()] = true
				}
			}
		}
	}
	for _, name := range []string{"apiserver_admission_webhook_admission_duration_seconds", "apiserver_admission_webhook_rejection_count", "apiserver_admission_webhook_request_total"} {
		if !seen[name] {
			t.Errorf("metric %s has no sample for the webhook", name)
		}
	}
	// An update is reviewed with the old object.
	cm, _ := e.cs.CoreV1().ConfigMaps("default").Get(context.Background(), "good", metav1.GetOptions{})
	cm.Data["k"] = "w"
	if _, err := e.cs.CoreV1().ConfigMaps("default").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if req := hook.last("/deny"); req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		t.Errorf("update review: operation %s, old object %q", req.Operation, req.OldObject.Raw)
	}
	// Deleting the configuration stops the webhook.
	if err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	untilEffective(t, e.cs, "default", func(err error) bool { return err == nil })
}

func TestMutatingWebhookPatchesAndWarns(t *testing.T) {
	e := newEnv(t)
	cs, warns := e.warningClient(t)
	jsonPatch := admissionv1.PatchTypeJSONPatch
	hook := newHookServer(t, func(_ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		var patch string
		if cm.Labels == nil {
			patch = `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
		} else {
			patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &jsonPatch, Warnings: []string{"mutated by the test webhook"}}
	})
	e.createMutatingHooks("mutate", mutatingHook("mutate.myriad.test", hook.clientConfig("/mutate"), configMapRule()))
	untilEffective(t, e.cs, "default", func(error) bool { return hook.calls("/mutate") > 0 })
	warns.take()
	got, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "m", map[string]string{"a": "b"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["mutated"] != "yes" || got.Labels["a"] != "b" {
		t.Errorf("labels %v: want the webhook's patch applied", got.Labels)
	}
	stored, err := e.cs.CoreV1().ConfigMaps("default").Get(context.Background(), "m", metav1.GetOptions{})
	if err != nil || stored.Labels["mutated"] != "yes" {
		t.Errorf("stored labels %v (err %v)", stored.Labels, err)
	}
	if w := warns.take(); len(w) != 1 || w[0] != "mutated by the test webhook" {
		t.Errorf("warnings %q, want the webhook's", w)
	}
	// The patch on an update too.
	stored.Labels = map[string]string{"other": "x"}
	upd, err := e.cs.CoreV1().ConfigMaps("default").Update(context.Background(), stored, metav1.UpdateOptions{})
	if err != nil || upd.Labels["mutated"] != "yes" || upd.Labels["other"] != "x" {
		t.Errorf("update: labels %v (err %v)", upd.Labels, err)
	}
}

func TestWebhookSelectorsAndMatchConditions(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("other")
	ns, _ := e.cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	ns.Labels = map[string]string{"hooked": "yes"}
	if _, err := e.cs.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "refused"}}
	})
	h := validatingHook("sel.myriad.test", hook.clientConfig("/sel"), configMapRule(admissionregistrationv1.Create))
	h.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"hooked": "yes"}}
	h.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-exempt", Expression: `!object.metadata.name.startsWith("exempt-")`}}
	e.createValidatingHooks("sel", h)
	untilEffective(t, e.cs, "default", func(err error) bool { return apierrors.IsBadRequest(err) })
	for _, c := range []struct {
		ns, name string
		labels   map[string]string
		refused  bool
	}{
		{"default", "matched", nil, true},
		{"other", "other-namespace", nil, false},
		{"default", "skipped", map[string]string{"skip": "1"}, false},
		{"default", "exempt-by-condition", nil, false},
	} {
		before := hook.calls("/sel")
		_, err := e.cs.CoreV1().ConfigMaps(c.ns).Create(context.Background(), configMap(c.ns, c.name, c.labels), metav1.CreateOptions{})
		// A denial without a code is a 400, as upstream's.
		if refused := apierrors.IsBadRequest(err); refused != c.refused || (!c.refused && err != nil) {
			t.Errorf("%s/%s: err %v, want refused=%v", c.ns, c.name, err, c.refused)
		}
		if called := hook.calls("/sel") > before; called != c.refused {
			t.Errorf("%s/%s: webhook called=%v, want %v", c.ns, c.name, called, c.refused)
		}
	}
	// A match condition that cannot be written is refused at write time.
	bad := validatingHook("bad.myriad.test", hook.clientConfig("/sel"), configMapRule())
	bad.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: `object.metadata.name +`}}
	_, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(),
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{bad}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "webhooks[0].matchConditions[0].expression") {
		t.Errorf("bad match condition: got %v, want 422 at webhooks[0].matchConditions[0].expression", err)
	}
}

// TestWebhookFailurePolicy: a webhook that hangs, answers garbage or shows
// a certificate its caBundle does not sign refuses the request with
// failurePolicy Fail, and lets it through with Ignore, within its timeout;
// a dead webhook never delays requests it does not match.
func TestWebhookFailurePolicy(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	hung := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hung.Close() })
	garbage := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("this is not an AdmissionReview"))
	}))
	t.Cleanup(garbage.Close)
	// httptest's TLS servers all present one built-in certificate: the
	// wrong one is a self-signed certificate of our own.
	wrong := httptest.NewUnstartedServer(garbage.Config.Handler)
	wrong.TLS = &tls.Config{Certificates: []tls.Certificate{selfSignedCert(t)}}
	wrong.StartTLS()
	t.Cleanup(wrong.Close)
	hungCfg := func() admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr(hung.URL + "/"), CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hung.Certificate().Raw})}
	}
	garbageCfg := admissionregistrationv1.WebhookClientConfig{URL: ptr(garbage.URL + "/"), CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: garbage.Certificate().Raw})}
	wrongCert := admissionregistrationv1.WebhookClientConfig{URL: ptr(wrong.URL + "/"), CABundle: garbageCfg.CABundle}

	for _, c := range []struct {
		name string
		cc   admissionregistrationv1.WebhookClientConfig
		want string
	}{
		{"hung", hungCfg(), "context deadline exceeded"},
		{"garbage", garbageCfg, "failed calling webhook"},
		{"wrong-cert", wrongCert, "x509"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := "fp-" + c.name
			e.createNamespace(ns)
			label := map[string]string{"kubernetes.io/metadata.name": ns}
			fail := validatingHook("fail.myriad.test", c.cc, configMapRule(admissionregistrationv1.Create))
			fail.TimeoutSeconds = ptr(int32(1))
			fail.NamespaceSelector = &metav1.LabelSelector{MatchLabels: label}
			fail.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "fail"}}
			ignore := fail
			ignore.Name = "ignore.myriad.test"
			ignore.FailurePolicy = ptr(admissionregistrationv1.Ignore)
			ignore.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"policy": "ignore"}}
			e.createValidatingHooks("fp-"+c.name, fail, ignore)
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err := e.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(ns, "f", map[string]string{"policy": "fail"}),
					metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `failed calling webhook "fail.myriad.test"`) {
						t.Fatalf("failurePolicy Fail: got %v, want a failed call (%s)", err, c.want)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("failurePolicy Fail never refused")
				}
				time.Sleep(20 * time.Millisecond)
			}
			start := time.Now()
			if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(ns, "i", map[string]string{"policy": "ignore"}), metav1.CreateOptions{}); err != nil {
				t.Fatalf("failurePolicy Ignore: %v", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("failurePolicy Ignore took %v, beyond the 1s timeout", took)
			}
			start = time.Now()
			if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), configMap(ns, "unmatched", nil), metav1.CreateOptions{}); err != nil {
				t.Fatalf("unmatched create: %v", err)
			}
			if took := time.Since(start); took > 500*time.Millisecond {
				t.Errorf("a request no webhook matches took %v", took)
			}
		})
	}
}

func TestWebhookDryRunAndSideEffects(t *testing.T) {
	e := newEnv(t)
	hook := newHookServer(t, nil)
	none := validatingHook("none.myriad.test", hook.clientConfig("/none"), configMapRule(admissionregistrationv1.Create))
	none.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"hook": "none"}}
	e.createValidatingHooks("none", none)
	// A webhook with side effects cannot be created (v1 requires None or
	// NoneOnDryRun) ...
	some := validatingHook("some.myriad.test", hook.clientConfig("/some"), configMapRule(admissionregistrationv1.Create))
	some.SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
	_, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(),
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "some"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{some}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "webhooks[0].sideEffects") {
		t.Fatalf("sideEffects Some: got %v, want 422", err)
	}
	waitFor(t, 5*time.Second, "webhook configured", func() bool {
		_, err := e.cs.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "dry", map[string]string{"hook": "none"}),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && hook.calls("/none") > 0
	})
	if req := hook.last("/none"); req.DryRun == nil || !*req.DryRun {
		t.Errorf("dry-run review: dryRun %v, want true", req.DryRun)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("default").Get(context.Background(), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry-run create was stored: %v", err)
	}
}

// TestMutatingWebhookReinvocation: a webhook with reinvocationPolicy
// IfNeeded is called again when a later webhook changed the object.
func TestMutatingWebhookReinvocation(t *testing.T) {
	e := newEnv(t)
	jsonPatch := admissionv1.PatchTypeJSONPatch
	var firstCalls atomic.Int32
	hook := newHookServer(t, func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(req.Object.Raw, &cm)
		switch path {
		case "/first":
			firstCalls.Add(1)
			if _, ok := cm.Data["first"]; !ok {
				return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/data/first","value":"1"}]`)}
			}
		case "/second":
			if _, ok := cm.Data["second"]; !ok {
				return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &jsonPatch, Patch: []byte(`[{"op":"add","path":"/data/second","value":"1"}]`)}
			}
		}
		return nil
	})
	first := mutatingHook("a-first.myriad.test", hook.clientConfig("/first"), configMapRule(admissionregistrationv1.Create))
	first.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
	second := mutatingHook("b-second.myriad.test", hook.clientConfig("/second"), configMapRule(admissionregistrationv1.Create))
	e.createMutatingHooks("reinvoke", first, second)
	untilEffective(t, e.cs, "default", func(error) bool { return hook.calls("/second") > 0 })
	firstCalls.Store(0)
	got, err := e.cs.CoreV1().ConfigMaps("default").Create(context.Background(), configMap("default", "r", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["first"] != "1" || got.Data["second"] != "1" {
		t.Errorf("data %v: want both webhooks' patches", got.Data)
	}
	if n := firstCalls.Load(); n != 2 {
		t.Errorf("first webhook called %d times, want 2 (reinvoked after the second changed the object)", n)
	}
}

// selfSignedCert is a serving certificate for 127.0.0.1 (and dnsNames)
// that no CA the tests trust signed.
func selfSignedCert(t testing.TB, dnsNames ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wrong"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: dnsNames, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestWebhookServiceReference: a webhook addressed by a Service is called
// at one of the Service's ready endpoints (there is no kube-proxy on the
// control plane), and its certificate is verified for
// <service>.<namespace>.svc.
func TestWebhookServiceReference(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cert := selfSignedCert(t, "hook.default.svc")
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		calls.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Result: &metav1.Status{Code: 403, Message: "refused via " + r.URL.Path}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	var port int32
	fmt.Sscan(portStr, &port)

	if _, err := e.cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"127.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(false)}},
			{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(port)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h := validatingHook("svc.myriad.test", admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Path: ptr("/by-service")},
		CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
	}, configMapRule(admissionregistrationv1.Create))
	e.createValidatingHooks("svc", h)
	var err error
	waitFor(t, 5*time.Second, "service webhook", func() bool {
		_, err = e.cs.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "x", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && calls.Load() > 0
	})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused via /by-service") {
		t.Fatalf("got %v, want the webhook's refusal through the service", err)
	}
	// The stored configuration has the service port defaulted.
	got, _ := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "svc", metav1.GetOptions{})
	if p := got.Webhooks[0].ClientConfig.Service.Port; p == nil || *p != 443 {
		t.Errorf("service port %v, want 443 by default", p)
	}
}
