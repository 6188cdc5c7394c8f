package registry

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validWebhook() admissionregistrationv1.ValidatingWebhook {
	url := "https://hooks.example.com/validate"
	return admissionregistrationv1.ValidatingWebhook{
		Name:         "check.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		SideEffects:             ptrTo(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func TestValidatingWebhookConfigurationValidation(t *testing.T) {
	r := validatingWebhookConfigurationResource(clock(time.Now))
	tests := []struct {
		name   string
		mutate func(w *admissionregistrationv1.ValidatingWebhook)
		want   []string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingWebhook) {}, nil},
		{"name not qualified", func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "check" }, []string{"Invalid value: webhooks[0].name"}},
		{"sideEffects required", func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }, []string{"Required value: webhooks[0].sideEffects"}},
		{"sideEffects Some refused", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.SideEffects = ptrTo(admissionregistrationv1.SideEffectClassSome)
		}, []string{"Unsupported value: webhooks[0].sideEffects"}},
		{"review versions required", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil },
			[]string{"Required value: webhooks[0].admissionReviewVersions"}},
		{"an unknown review version only", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v9"} },
			[]string{"Invalid value: webhooks[0].admissionReviewVersions"}},
		{"url and service", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}
		}, []string{"Required value: webhooks[0].clientConfig"}},
		{"neither url nor service", func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = nil },
			[]string{"Required value: webhooks[0].clientConfig"}},
		{"http url", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = ptrTo("http://x.example.com/")
		},
			[]string{"Invalid value: webhooks[0].clientConfig.url"}},
		{"service without name", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns"}}
		}, []string{"Required value: webhooks[0].clientConfig.service.name"}},
		{"timeout out of range", func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptrTo(int32(31)) },
			[]string{"Invalid value: webhooks[0].timeoutSeconds"}},
		{"rule without operations, wildcard mixed", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = nil
			w.Rules[0].Resources = []string{"*", "pods"}
		}, []string{"Required value: webhooks[0].rules[0].operations", "Invalid value: webhooks[0].rules[0].resources"}},
		{"bad match condition", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.metadata.name +"}}
		}, []string{"Invalid value: webhooks[0].matchConditions[0].expression"}},
		{"match condition not bool", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.metadata.name"}}
		}, []string{"Invalid value: webhooks[0].matchConditions[0].expression"}},
		{"match condition with params", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "params.x == 1"}}
		}, []string{"Invalid value: webhooks[0].matchConditions[0].expression"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := validWebhook()
			tc.mutate(&w)
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
			wantErrs(t, create(r, c), tc.want...)
		})
	}
	// Duplicate names, and the ratchet: what old held stays valid.
	a, b := validWebhook(), validWebhook()
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{a, b}}
	wantErrs(t, create(r, c), "Duplicate value: webhooks[1].name")
	old := c.DeepCopy()
	old.ResourceVersion, c.ResourceVersion = "1", "1"
	wantErrs(t, update(r, c, old))
}

func TestWebhookDefaults(t *testing.T) {
	r := mutatingWebhookConfigurationResource(clock(time.Now))
	w := validWebhook()
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name: w.Name, ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}},
		Rules: w.Rules, SideEffects: w.SideEffects, AdmissionReviewVersions: w.AdmissionReviewVersions,
	}}}
	wantErrs(t, create(r, c))
	got := c.Webhooks[0]
	if *got.FailurePolicy != admissionregistrationv1.Fail || *got.MatchPolicy != admissionregistrationv1.Equivalent ||
		got.NamespaceSelector == nil || got.ObjectSelector == nil || *got.TimeoutSeconds != 10 ||
		*got.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *got.Rules[0].Scope != admissionregistrationv1.AllScopes ||
		*got.ClientConfig.Service.Port != 443 {
		t.Errorf("defaults not applied: %+v", got)
	}
	if c.Generation != 1 {
		t.Errorf("generation %d, want 1", c.Generation)
	}
	row := cells(r, c)
	if row["Webhooks"] != int64(1) || strings.Join(columnNames(r), ",") != "Name,Webhooks,Age" {
		t.Errorf("table: %v %v", columnNames(r), row)
	}
}

func validPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: validWebhook().Rules[0],
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.containers.size() < 10"}},
		},
	}
}

func TestValidatingAdmissionPolicyValidation(t *testing.T) {
	r := validatingAdmissionPolicyResource(clock(time.Now))
	tests := []struct {
		name   string
		mutate func(p *admissionregistrationv1.ValidatingAdmissionPolicy)
		want   []string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingAdmissionPolicy) {}, nil},
		{"matchConstraints required", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil },
			[]string{"Required value: spec.matchConstraints"}},
		{"nothing to check", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations = nil },
			[]string{"Required value: spec.validations", "Required value: spec.auditAnnotations"}},
		{"bad CEL", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.("
		},
			[]string{"Invalid value: spec.validations[0].expression"}},
		{"params without paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "params.max > 1"
		}, []string{"Invalid value: spec.validations[0].expression"}},
		{"params with paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].Expression = "params.data.max > '1'"
		}, nil},
		{"variables", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "n", Expression: "object.spec.containers.size()"}}
			p.Spec.Validations[0].Expression = "variables.n < 10"
		}, nil},
		{"bad variable name", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "in", Expression: "1"}}
		}, []string{"Invalid value: spec.variables[0].name"}},
		{"message with a newline, bad reason", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Message = "a\nb"
			p.Spec.Validations[0].Reason = ptrTo(metav1.StatusReasonConflict)
		}, []string{"Invalid value: spec.validations[0].message", "Unsupported value: spec.validations[0].reason"}},
		{"bad message expression", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "1 +"
		},
			[]string{"Invalid value: spec.validations[0].messageExpression"}},
		{"bad paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c"}
		}, []string{"Invalid value: spec.paramKind.apiVersion", "Required value: spec.paramKind.kind"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := validPolicy()
			tc.mutate(p)
			wantErrs(t, create(r, p), tc.want...)
		})
	}
	// Status is the status subresource's alone, and type-checking
	// warnings need a field reference.
	p := validPolicy()
	wantErrs(t, create(r, p))
	p.ResourceVersion = "1"
	st := p.DeepCopy()
	st.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{Warning: "w"}}}
	wantErrs(t, updateStatus(r, st, p), "Required value: status.typeChecking.expressionWarnings[0].fieldRef")
	upd := p.DeepCopy()
	upd.Status.ObservedGeneration = 7
	upd.Spec.Validations[0].Expression = "true"
	wantErrs(t, update(r, upd, p))
	if upd.Status.ObservedGeneration != 0 || upd.Generation != 2 {
		t.Errorf("update: observedGeneration %d (want it kept from old), generation %d (want 2)", upd.Status.ObservedGeneration, upd.Generation)
	}
	if got := cells(r, p); got["Validations"] != int64(1) || got["ParamKind"] != "<unset>" {
		t.Errorf("row %v", got)
	}
}

func TestValidatingAdmissionPolicyBindingValidation(t *testing.T) {
	r := validatingAdmissionPolicyBindingResource(clock(time.Now))
	tests := []struct {
		name   string
		spec   admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec
		want   []string
		column string
	}{
		{"valid", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Deny"}}, nil, "<unset>"},
		{"no actions, no policy", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{},
			[]string{"Required value: spec.policyName", "Required value: spec.validationActions"}, "<unset>"},
		{"deny and warn", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Deny", "Warn", "Warn"}},
			[]string{"Invalid value: spec.validationActions", "Duplicate value: spec.validationActions[2]"}, "<unset>"},
		{"paramRef name and selector", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Audit"},
			ParamRef: &admissionregistrationv1.ParamRef{Name: "x", Selector: &metav1.LabelSelector{}}},
			[]string{"Forbidden: spec.paramRef.name", "Forbidden: spec.paramRef.selector", "Required value: spec.paramRef.parameterNotFoundAction"}, "*/x"},
		{"paramRef in a namespace", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Deny"},
			ParamRef: &admissionregistrationv1.ParamRef{Name: "x", Namespace: "ns", ParameterNotFoundAction: ptrTo(admissionregistrationv1.AllowAction)}}, nil, "ns/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: tc.spec}
			wantErrs(t, create(r, b), tc.want...)
			if got := cells(r, b)["ParamRef"]; got != tc.column {
				t.Errorf("PARAMREF %q, want %q", got, tc.column)
			}
		})
	}
}
