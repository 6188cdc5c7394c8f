package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionWebhookAndPolicy: an admission webhook (a TLS server in
// this test) and ValidatingAdmissionPolicies as a user meets them through
// kubectl on the shared `myriad up`; both are scoped to one namespace so
// that the other tests never meet them.
func TestAdmissionWebhookAndPolicy(t *testing.T) {
	s := shared
	const ns = "admission-e2e"
	s.mustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() {
		_, _ = s.kubectl(t, "", "delete", "validatingwebhookconfiguration", "e2e-deny", "--ignore-not-found")
		_, _ = s.kubectl(t, "", "delete", "validatingadmissionpolicy,validatingadmissionpolicybinding", "e2e-small", "e2e-warn", "--ignore-not-found")
		_, _ = s.kubectl(t, "", "delete", "namespace", ns, "--wait=false")
	})

	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if strings.HasPrefix(review.Request.Name, "forbidden-") {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "the e2e webhook refuses forbidden- names"}
		}
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	s.mustKubectl(t, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: e2e-deny
webhooks:
- name: deny.e2e.myriad.test
  clientConfig:
    url: `+hook.URL+`/validate
    caBundle: `+ca+`
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: `+ns+`
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 5
`, "apply", "-f", "-")
	out := s.mustKubectl(t, "", "get", "validatingwebhookconfiguration", "e2e-deny")
	if !strings.Contains(out, "WEBHOOKS") || !strings.Contains(out, "e2e-deny") {
		t.Errorf("kubectl get validatingwebhookconfiguration:\n%s", out)
	}
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err = s.kubectl(t, "", "create", "configmap", "forbidden-one", "-n", ns, "--dry-run=server")
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// kubectl create configmap words the error itself ("failed to create
	// configmap: "), around the server's message.
	want := `admission webhook "deny.e2e.myriad.test" denied the request: the e2e webhook refuses forbidden- names`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("create forbidden-one: err %v\n%s\nwant %s", err, out, want)
	}
	s.mustKubectl(t, "", "create", "configmap", "allowed", "-n", ns)
	// Upstream's webhook metrics, under upstream's names, on /metrics.
	metrics, err := s.client(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{
		`apiserver_admission_webhook_admission_duration_seconds_count{name="deny.e2e.myriad.test"`,
		`apiserver_admission_webhook_rejection_count{error_type="no_error",name="deny.e2e.myriad.test"`,
	} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	// A policy that denies, and one that warns.
	s.mustKubectl(t, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-small
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.data) || object.data.size() <= 1"
    message: "at most one key"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-small
spec:
  policyName: e2e-small
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: `+ns+`
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-warn
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas >= 2"
    messageExpression: "'deployment ' + object.metadata.name + ' has fewer than 2 replicas'"
  - expression: "object.spec.replicas > 'many'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-warn
spec:
  policyName: e2e-warn
  validationActions: [Warn]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: `+ns+`
`, "apply", "-f", "-")
	deadline = time.Now().Add(10 * time.Second)
	for {
		out, err = s.kubectl(t, "", "create", "configmap", "two-keys", "-n", ns, "--from-literal=a=1", "--from-literal=b=2", "--dry-run=server")
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want = `ValidatingAdmissionPolicy 'e2e-small' with binding 'e2e-small' denied request: at most one key`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("policy Deny: err %v\n%s\nwant %s", err, out, want)
	}
	out = s.mustKubectl(t, "", "create", "deployment", "lonely", "-n", ns, "--image=nginx", "--replicas=1")
	want = `Warning: Validation failed for ValidatingAdmissionPolicy 'e2e-warn' with binding 'e2e-warn': deployment lonely has fewer than 2 replicas`
	if !strings.Contains(out, want) || !strings.Contains(out, "deployment.apps/lonely created") {
		t.Fatalf("policy Warn:\n%s\nwant %s", out, want)
	}
	out = s.mustKubectl(t, "", "get", "validatingadmissionpolicy", "e2e-small", "e2e-warn")
	for _, w := range []string{"VALIDATIONS", "PARAMKIND", "e2e-small", "<unset>"} {
		if !strings.Contains(out, w) {
			t.Errorf("kubectl get validatingadmissionpolicy lacks %q:\n%s", w, out)
		}
	}
	// The status controller type-checks the policy against the
	// Deployment schema: comparing an integer with a string is reported.
	deadline = time.Now().Add(20 * time.Second)
	for {
		out, _ = s.kubectl(t, "", "get", "validatingadmissionpolicy", "e2e-warn", "-o", "jsonpath={.status.observedGeneration} {.status.typeChecking.expressionWarnings[*].fieldRef}: {.status.typeChecking.expressionWarnings[*].warning}")
		if strings.HasPrefix(out, "1 ") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.HasPrefix(out, "1 spec.validations[1].expression: ") || !strings.Contains(out, "apps/v1, Kind=Deployment") || !strings.Contains(out, "no matching overload") {
		t.Errorf("type checking status: %q", out)
	}
}
