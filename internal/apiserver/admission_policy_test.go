package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func configMapPolicy(name string, validations []admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: configMapRule()[0],
			}}},
			Validations: validations,
		},
	}
}

func policyBinding(name, policy string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
}

func (e *testEnv) createPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating policy %s: %v", p.Name, err)
	}
	if _, err := e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating binding %s: %v", b.Name, err)
	}
}

func TestValidatingAdmissionPolicyDenyAndWarn(t *testing.T) {
	e := newEnv(t)
	cs, warns := e.warningClient(t)
	e.createNamespace("warned")
	deny := configMapPolicy("small-configmaps", []admissionregistrationv1.Validation{{
		Expression: "!has(object.data) || object.data.size() <= 2", Message: "at most two keys",
	}})
	denyBinding := policyBinding("small-configmaps", "small-configmaps", admissionregistrationv1.Deny)
	denyBinding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": "default"}}}
	e.createPolicy(deny, denyBinding)
	warn := configMapPolicy("named-keys", []admissionregistrationv1.Validation{{
		Expression:        "!has(object.data) || !('bad' in object.data)",
		MessageExpression: "'key bad in ' + object.metadata.name",
	}})
	e.createPolicy(warn, policyBinding("named-keys", "named-keys", admissionregistrationv1.Warn))

	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"a": "1", "b": "2", "c": "3"}}
	start := time.Now()
	var err error
	for {
		_, err = cs.CoreV1().ConfigMaps("default").Create(context.Background(), big, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || time.Since(start) > 5*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(),
		"ValidatingAdmissionPolicy 'small-configmaps' with binding 'small-configmaps' denied request: at most two keys") {
		t.Fatalf("create big: got %v, want the policy's 422", err)
	}
	t.Logf("policy effective after %v", time.Since(start))
	// Not bound in namespace warned: allowed.
	if _, err := cs.CoreV1().ConfigMaps("warned").Create(context.Background(), big, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create big in an unbound namespace: %v", err)
	}
	warns.take()
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "has-bad"}, Data: map[string]string{"bad": "1"}}
	if _, err := cs.CoreV1().ConfigMaps("warned").Create(context.Background(), bad, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Warn binding refused: %v", err)
	}
	if w := warns.take(); len(w) != 1 || w[0] != "Validation failed for ValidatingAdmissionPolicy 'named-keys' with binding 'named-keys': key bad in has-bad" {
		t.Errorf("warnings %q, want the policy's", w)
	}
}

func TestValidatingAdmissionPolicyParams(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// The param: a ConfigMap holding the largest allowed replica count.
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"maxKeys": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "max-keys"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
				},
			}}},
			Variables: []admissionregistrationv1.Variable{{Name: "keys", Expression: "has(object.data) ? object.data.size() : 0"}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "variables.keys <= int(params.data.maxKeys)",
				MessageExpression: "'too many keys: ' + string(variables.keys) + ' > ' + params.data.maxKeys",
			}},
		},
	}
	b := policyBinding("max-keys", "max-keys", admissionregistrationv1.Deny)
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default",
		ParameterNotFoundAction: ptr(admissionregistrationv1.DenyAction)}
	e.createPolicy(p, b)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "two"}, StringData: map[string]string{"a": "1", "b": "2"}}
	var err error
	waitFor(t, 5*time.Second, "policy with params", func() bool {
		_, err = e.cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "too many keys: 2 > 1") {
		t.Fatalf("got %v, want the policy's denial with the param's value", err)
	}
	// Raising the param's limit lets it through.
	cm, _ := e.cs.CoreV1().ConfigMaps("default").Get(ctx, "limits", metav1.GetOptions{})
	cm.Data["maxKeys"] = "5"
	if _, err := e.cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "raised param", func() bool {
		_, err = e.cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{})
		return err == nil
	})
}

func TestValidatingAdmissionPolicyValidation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		policy *admissionregistrationv1.ValidatingAdmissionPolicy
		want   string
	}{
		{"bad CEL", configMapPolicy("bad-cel", []admissionregistrationv1.Validation{{Expression: "object.metadata.name =="}}),
			"spec.validations[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed"},
		{"not bool", configMapPolicy("not-bool", []admissionregistrationv1.Validation{{Expression: "object.metadata.name"}}),
			"must evaluate to bool"},
		{"no validations", configMapPolicy("none", nil), "validations or auditAnnotations must contain at least one item"},
	} {
		_, err := e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, c.policy, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want 422 containing %q", c.name, err, c.want)
		}
	}
	b := policyBinding("both", "p", admissionregistrationv1.Deny, admissionregistrationv1.Warn)
	_, err := e.cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must not contain both Deny and Warn") {
		t.Errorf("Deny and Warn: got %v", err)
	}
}
