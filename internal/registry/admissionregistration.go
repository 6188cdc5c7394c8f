package registry

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file serves admissionregistration.k8s.io/v1: the webhook
// configurations and ValidatingAdmissionPolicy with its bindings. The
// admission plugins that act on them live in internal/admission/webhook
// and internal/admission/policy; validation (with its CEL compilation) is
// in admissionregistration_validation.go.

const admissionRegistrationGroup = "admissionregistration.k8s.io"

// upstream lists every admissionregistration resource under this category.
var apiExtensionsCategory = []string{"api-extensions"}

func webhookCountColumn() metav1.TableColumnDefinition {
	return col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration")
}

func mutatingWebhookConfigurationResource(c clock) *Resource {
	gv := v1(admissionRegistrationGroup)
	type T = *admissionregistrationv1.MutatingWebhookConfiguration
	s := strategy[T]{behavior[T]{
		name: apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old T) bool {
			return semanticChanged(obj.Webhooks, old.Webhooks)
		},
		defaults: func(obj T) {
			for i := range obj.Webhooks {
				defaultMutatingWebhook(&obj.Webhooks[i])
			}
		},
		validateCreate: func(obj T) field.ErrorList { return validateMutatingWebhookConfiguration(obj, nil) },
		validateUpdate: func(obj, old T) field.ErrorList { return validateMutatingWebhookConfiguration(obj, old) },
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "MutatingWebhookConfiguration",
		Resource:         "mutatingwebhookconfigurations",
		SingularName:     "mutatingwebhookconfiguration",
		Categories:       apiExtensionsCategory,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[T]{
			columns: []metav1.TableColumnDefinition{nameColumn(), webhookCountColumn(), ageColumn()},
			cells: func(o T) []interface{} {
				return []interface{}{o.Name, int64(len(o.Webhooks)), c.since(o.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "mutatingwebhookconfigurations"),
	}
}

func validatingWebhookConfigurationResource(c clock) *Resource {
	gv := v1(admissionRegistrationGroup)
	type T = *admissionregistrationv1.ValidatingWebhookConfiguration
	s := strategy[T]{behavior[T]{
		name: apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old T) bool {
			return semanticChanged(obj.Webhooks, old.Webhooks)
		},
		defaults: func(obj T) {
			for i := range obj.Webhooks {
				defaultValidatingWebhook(&obj.Webhooks[i])
			}
		},
		validateCreate: func(obj T) field.ErrorList { return validateValidatingWebhookConfiguration(obj, nil) },
		validateUpdate: func(obj, old T) field.ErrorList { return validateValidatingWebhookConfiguration(obj, old) },
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ValidatingWebhookConfiguration",
		Resource:         "validatingwebhookconfigurations",
		SingularName:     "validatingwebhookconfiguration",
		Categories:       apiExtensionsCategory,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[T]{
			columns: []metav1.TableColumnDefinition{nameColumn(), webhookCountColumn(), ageColumn()},
			cells: func(o T) []interface{} {
				return []interface{}{o.Name, int64(len(o.Webhooks)), c.since(o.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "validatingwebhookconfigurations"),
	}
}

func validatingAdmissionPolicyResource(c clock) *Resource {
	gv := v1(admissionRegistrationGroup)
	type T = *admissionregistrationv1.ValidatingAdmissionPolicy
	s := strategy[T]{behavior[T]{
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old T) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(obj T) { obj.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{} },
		keepStatus:  func(obj, old T) { obj.Status = old.Status },
		keepSpec: func(obj, old T) {
			obj.Spec = old.Spec
			obj.Labels, obj.Annotations = old.Labels, old.Annotations
		},
		defaults:       func(obj T) { defaultValidatingAdmissionPolicySpec(&obj.Spec) },
		validateCreate: func(obj T) field.ErrorList { return validateValidatingAdmissionPolicy(obj, nil) },
		validateUpdate: func(obj, old T) field.ErrorList { return validateValidatingAdmissionPolicy(obj, old) },
		validateStatus: func(obj, _ T) field.ErrorList {
			return validateValidatingAdmissionPolicyStatus(&obj.Status, field.NewPath("status"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ValidatingAdmissionPolicy",
		Resource:         "validatingadmissionpolicies",
		SingularName:     "validatingadmissionpolicy",
		Categories:       apiExtensionsCategory,
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[T]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
				col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
				ageColumn(),
			},
			cells: func(o T) []interface{} {
				paramKind := "<unset>"
				if pk := o.Spec.ParamKind; pk != nil {
					paramKind = pk.APIVersion + "/" + pk.Kind
				}
				return []interface{}{o.Name, int64(len(o.Spec.Validations)), paramKind, c.since(o.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "validatingadmissionpolicies"),
	}
}

func validatingAdmissionPolicyBindingResource(c clock) *Resource {
	gv := v1(admissionRegistrationGroup)
	type T = *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	s := strategy[T]{behavior[T]{
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old T) bool { return semanticChanged(obj.Spec, old.Spec) },
		defaults: func(obj T) {
			if obj.Spec.MatchResources != nil {
				defaultMatchResources(obj.Spec.MatchResources)
			}
		},
		validate: validateValidatingAdmissionPolicyBinding,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ValidatingAdmissionPolicyBinding",
		Resource:         "validatingadmissionpolicybindings",
		SingularName:     "validatingadmissionpolicybinding",
		Categories:       apiExtensionsCategory,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
		NewList:          func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[T]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
				col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
				ageColumn(),
			},
			cells: func(o T) []interface{} {
				return []interface{}{o.Name, o.Spec.PolicyName, bindingParamName(o.Spec.ParamRef), c.since(o.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "validatingadmissionpolicybindings"),
	}
}

// bindingParamName is upstream's PARAMREF cell: a binding cannot tell
// whether its param kind is namespaced, so a name without a namespace
// shows as "*/name".
func bindingParamName(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name
	case pr.Selector != nil:
		return fmt.Sprint(metav1.FormatLabelSelector(pr.Selector))
	}
	return "<unset>"
}

// The defaults are upstream's SetDefaults_* of admissionregistration/v1.

func defaultMutatingWebhook(w *admissionregistrationv1.MutatingWebhook) {
	defaultWebhookCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds)
	if w.ReinvocationPolicy == nil {
		w.ReinvocationPolicy = ptrTo(admissionregistrationv1.NeverReinvocationPolicy)
	}
	defaultRules(w.Rules)
	defaultClientConfig(&w.ClientConfig)
}

func defaultValidatingWebhook(w *admissionregistrationv1.ValidatingWebhook) {
	defaultWebhookCommon(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds)
	defaultRules(w.Rules)
	defaultClientConfig(&w.ClientConfig)
}

func defaultWebhookCommon(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType,
	ns, obj **metav1.LabelSelector, timeout **int32) {
	if *fp == nil {
		*fp = ptrTo(admissionregistrationv1.Fail)
	}
	if *mp == nil {
		*mp = ptrTo(admissionregistrationv1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptrTo(int32(10))
	}
}

func defaultRules(rules []admissionregistrationv1.RuleWithOperations) {
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
		}
	}
}

func defaultClientConfig(cc *admissionregistrationv1.WebhookClientConfig) {
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptrTo(int32(443))
	}
}

func defaultValidatingAdmissionPolicySpec(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
	if s.FailurePolicy == nil {
		s.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
	}
	if s.MatchConstraints != nil {
		defaultMatchResources(s.MatchConstraints)
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptrTo(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
			}
		}
	}
}
