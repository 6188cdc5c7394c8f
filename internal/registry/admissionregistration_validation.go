package registry

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/util/jsonpath"
)

// Validation of admissionregistration.k8s.io/v1, after upstream's
// pkg/apis/admissionregistration/validation (same rules, same messages),
// written against the v1 types since Myriad has no internal versions. CEL
// expressions are compiled here with k8s.io/apiserver's compilers and cost
// limits, so a bad or too costly expression is a 422 when the object is
// written, never an error when a request meets it.
//
// Updates follow upstream's ratchet: what old already held (side-effect
// classes, review versions, duplicate names, match conditions, stored CEL
// expressions, which compile in the more permissive stored environment)
// stays valid, so an object written by an older server can still be
// changed.

var (
	supportedFailurePolicies       = []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}
	supportedMatchPolicies         = []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}
	supportedSideEffectClasses     = []string{"None", "NoneOnDryRun", "Some", "Unknown"}
	noSideEffectClasses            = []string{"None", "NoneOnDryRun"}
	supportedOperations            = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	supportedReinvocationPolicies  = []string{string(admissionregistrationv1.IfNeededReinvocationPolicy), string(admissionregistrationv1.NeverReinvocationPolicy)}
	supportedScopes                = []string{"*", "Cluster", "Namespaced"}
	supportedValidationReasons     = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge)}
	supportedValidationActions     = []string{"Audit", "Deny", "Warn"}
	acceptedAdmissionReviewVersion = []string{"v1", "v1beta1"}
)

const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
	maxMatchConditions                      = 64
)

// admissionValidation are the relaxations an update earns from its old
// object (upstream's validationOptions).
type admissionValidation struct {
	ignoreMatchConditions        bool
	allowParamsInMatchConditions bool
	allowSideEffects             bool
	allowUnrecognizedReviews     bool
	allowDuplicateNames          bool
	allowInvalidLabelValues      bool
	stored                       sets.Set[string]
}

func (o admissionValidation) envType(expression string) environment.Type {
	if o.stored.Has(expression) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// statelessCompiler is built once per process: building a CEL environment
// costs milliseconds, and they are safe for concurrent use (the composited
// one, which holds a policy's variables, is made per policy).
var statelessCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

func validateMutatingWebhookConfiguration(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	var oldHooks []admissionregistrationv1.MutatingWebhook
	if old != nil {
		oldHooks = old.Webhooks
	}
	return validateWebhooks(c.Webhooks, oldHooks, old != nil)
}

func validateValidatingWebhookConfiguration(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	var oldHooks []admissionregistrationv1.MutatingWebhook
	if old != nil {
		oldHooks = asMutatingWebhooks(old.Webhooks)
	}
	return validateWebhooks(asMutatingWebhooks(c.Webhooks), oldHooks, old != nil)
}

// asMutatingWebhooks views validating webhooks as mutating ones without a
// reinvocation policy: a ValidatingWebhook's fields are a MutatingWebhook's
// but that one, so both configurations validate through validateWebhooks.
func asMutatingWebhooks(hooks []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.MutatingWebhook {
	out := make([]admissionregistrationv1.MutatingWebhook, len(hooks))
	for i, h := range hooks {
		out[i] = admissionregistrationv1.MutatingWebhook{
			Name: h.Name, ClientConfig: h.ClientConfig, Rules: h.Rules, FailurePolicy: h.FailurePolicy,
			MatchPolicy: h.MatchPolicy, NamespaceSelector: h.NamespaceSelector, ObjectSelector: h.ObjectSelector,
			SideEffects: h.SideEffects, TimeoutSeconds: h.TimeoutSeconds, AdmissionReviewVersions: h.AdmissionReviewVersions,
			MatchConditions: h.MatchConditions,
		}
	}
	return out
}

// validateWebhooks validates a configuration's webhooks, and on update
// (isUpdate) tolerates what the stored ones (old) already had, as upstream.
func validateWebhooks(hooks, old []admissionregistrationv1.MutatingWebhook, isUpdate bool) field.ErrorList {
	opts := admissionValidation{stored: sets.New[string]()}
	if isUpdate {
		opts.allowSideEffects = !allHooks(old, func(h admissionregistrationv1.MutatingWebhook) bool {
			return in(sideEffect(h.SideEffects), noSideEffectClasses)
		})
		opts.allowUnrecognizedReviews = !allHooks(old, func(h admissionregistrationv1.MutatingWebhook) bool { return hasAccepted(h.AdmissionReviewVersions) })
		opts.allowDuplicateNames = !uniqueNames(old, func(h admissionregistrationv1.MutatingWebhook) string { return h.Name })
		opts.allowInvalidLabelValues = !allHooks(old, func(h admissionregistrationv1.MutatingWebhook) bool {
			return validSelectors(h.NamespaceSelector, h.ObjectSelector)
		})
		opts.ignoreMatchConditions = len(hooks) == len(old) && allIndexed(hooks, func(i int, h admissionregistrationv1.MutatingWebhook) bool {
			return semanticEqual(h.MatchConditions, old[i].MatchConditions)
		})
		for _, h := range old {
			for _, mc := range h.MatchConditions {
				opts.stored.Insert(mc.Expression)
			}
		}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range hooks {
		h := &hooks[i]
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhookCommon(p, h.Name, h.Rules, h.FailurePolicy, h.MatchPolicy, h.SideEffects, h.TimeoutSeconds,
			h.NamespaceSelector, h.ObjectSelector, h.ClientConfig, h.MatchConditions, opts)...)
		// Validating webhooks have no reinvocation policy: nil here.
		if h.ReinvocationPolicy != nil && !in(string(*h.ReinvocationPolicy), supportedReinvocationPolicies) {
			errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *h.ReinvocationPolicy, supportedReinvocationPolicies))
		}
		errs = append(errs, validateAdmissionReviewVersions(h.AdmissionReviewVersions, !opts.allowUnrecognizedReviews, p.Child("admissionReviewVersions"))...)
		errs = append(errs, duplicateName(names, h.Name, opts, p)...)
	}
	return errs
}

func duplicateName(names sets.Set[string], name string, opts admissionValidation, p *field.Path) field.ErrorList {
	if opts.allowDuplicateNames || name == "" {
		return nil
	}
	if names.Has(name) {
		return field.ErrorList{field.Duplicate(p.Child("name"), name)}
	}
	names.Insert(name)
	return nil
}

func validateWebhookCommon(p *field.Path, name string, rules []admissionregistrationv1.RuleWithOperations,
	fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType,
	se *admissionregistrationv1.SideEffectClass, timeout *int32, nsSel, objSel *metav1.LabelSelector,
	cc admissionregistrationv1.WebhookClientConfig, conditions []admissionregistrationv1.MatchCondition, opts admissionValidation) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), name)
	for i := range rules {
		errs = append(errs, validateRuleWithOperations(&rules[i], p.Child("rules").Index(i))...)
	}
	if fp != nil && !in(string(*fp), supportedFailurePolicies) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, supportedFailurePolicies))
	}
	if mp != nil && !in(string(*mp), supportedMatchPolicies) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, supportedMatchPolicies))
	}
	allowed := noSideEffectClasses
	if opts.allowSideEffects {
		allowed = supportedSideEffectClasses
	}
	if se == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(allowed, ", "))))
	} else if !in(string(*se), allowed) {
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *se, allowed))
	}
	if timeout != nil && (*timeout > 30 || *timeout < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	selOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValues}
	if nsSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(nsSel, selOpts, p.Child("namespaceSelector"))...)
	}
	if objSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(objSel, selOpts, p.Child("objectSelector"))...)
	}
	cp := p.Child("clientConfig")
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(cp, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhookutil.ValidateWebhookURL(cp.Child("url"), *cc.URL, true)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		// Upstream passes name and namespace the other way round, so its
		// errors name the wrong field; the parameters are (namespace, name).
		errs = append(errs, webhookutil.ValidateWebhookService(cp.Child("service"), cc.Service.Namespace, cc.Service.Name, cc.Service.Path, port)...)
	}
	// caBundle is not checked here, as upstream does not: charts commonly
	// ship a placeholder ("Cg==") that a CA injector replaces later, and a
	// bundle that cannot be used fails the call, per failurePolicy.
	if !opts.ignoreMatchConditions {
		errs = append(errs, validateMatchConditions(conditions, opts, p.Child("matchConditions"))...)
	}
	return errs
}

func validateAdmissionReviewVersions(versions []string, requireRecognized bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) < 1 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("must specify one of %v", strings.Join(acceptedAdmissionReviewVersion, ", ")))}
	}
	seen := sets.New[string]()
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
	}
	if requireRecognized && !hasAccepted(versions) {
		errs = append(errs, field.Invalid(p, versions, fmt.Sprintf("must include at least one of %v", strings.Join(acceptedAdmissionReviewVersion, ", "))))
	}
	return errs
}

func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !in(string(op), supportedOperations) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, supportedOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateRuleResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !in(string(*r.Scope), supportedScopes) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, supportedScopes))
	}
	return errs
}

// validateRuleResources is upstream's validateResources: "resource",
// "resource/subresource", and the wildcards, without overlaps.
func validateRuleResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	wildSub, wildRes := sets.New[string](), sets.New[string]()
	var doubleWild, singleWild, plain bool
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		doubleWild = doubleWild || rs == "*/*"
		singleWild = singleWild || rs == "*"
		res, sub, found := strings.Cut(rs, "/")
		if !found {
			plain = plain || rs != "*"
			continue
		}
		if wildSub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub.Insert(res)
		}
		if res == "*" {
			wildRes.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWild {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWild && plain {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateMatchConditions(m []admissionregistrationv1.MatchCondition, opts admissionValidation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(m) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(m), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, mc := range m {
		ip := p.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(ip.Child("expression"), ""))
		} else {
			errs = append(errs, compileCEL(statelessCompiler(), &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: opts.allowParamsInMatchConditions, HasAuthorizer: true},
				opts.envType(expr), ip.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), mc.Name, msg))
			}
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return errs
}

// compileCEL compiles one expression and turns a compilation error into
// the field error upstream reports (a cost past the limit is one).
func compileCEL(c plugincel.Compiler, expr plugincel.ExpressionAccessor, vars plugincel.OptionalVariableDeclarations, env environment.Type, p *field.Path) field.ErrorList {
	res := c.CompileCELExpression(expr, vars, env)
	if res.Error == nil {
		return nil
	}
	return field.ErrorList{celFieldError(p, expr.GetExpression(), res.Error)}
}

func celFieldError(p *field.Path, expression string, err error) *field.Error {
	var celErr *apiservercel.Error
	if errors.As(err, &celErr) {
		switch celErr.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(p, celErr.Detail)
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(p, expression, celErr.Detail)
		}
		return field.InternalError(p, celErr)
	}
	return field.InternalError(p, fmt.Errorf("unsupported error type: %w", err))
}

func validateValidatingAdmissionPolicy(vap, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	opts := admissionValidation{stored: sets.New[string]()}
	if old != nil {
		opts.ignoreMatchConditions = semanticEqual(vap.Spec.MatchConditions, old.Spec.MatchConditions)
		for _, mc := range old.Spec.MatchConditions {
			opts.stored.Insert(mc.Expression)
		}
		for _, v := range old.Spec.Validations {
			opts.stored.Insert(v.Expression, v.MessageExpression)
		}
		for _, a := range old.Spec.AuditAnnotations {
			opts.stored.Insert(a.ValueExpression)
		}
		for _, v := range old.Spec.Variables {
			opts.stored.Insert(v.Expression)
		}
	}
	spec := &vap.Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	// A policy with variables compiles every expression in an environment
	// holding them (variables.name); that compiler is stateful, so one per
	// policy.
	var compiler plugincel.Compiler = statelessCompiler()
	if len(spec.Variables) > 0 {
		cc, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		if err != nil {
			return field.ErrorList{field.InternalError(p.Child("variables"), err)}
		}
		compiler = cc
	}
	if spec.FailurePolicy == nil {
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	} else if !in(string(*spec.FailurePolicy), supportedFailurePolicies) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *spec.FailurePolicy, supportedFailurePolicies))
	}
	hasParams := spec.ParamKind != nil
	if hasParams {
		opts.allowParamsInMatchConditions = true
		errs = append(errs, validateParamKind(*spec.ParamKind, p.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(spec.MatchConstraints, p.Child("matchConstraints"))...)
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(p.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if !opts.ignoreMatchConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, opts, p.Child("matchConditions"))...)
	}
	vars := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	for i, v := range spec.Variables {
		vp := p.Child("variables").Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		} else if !isCELIdentifier(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
			continue
		}
		variable := &validatingpolicy.Variable{Name: v.Name, Expression: v.Expression}
		if res := compiler.(*plugincel.CompositedCompiler).CompileAndStoreVariable(variable, vars, opts.envType(v.Expression)); res.Error != nil {
			errs = append(errs, celFieldError(vp.Child("expression"), v.Expression, res.Error))
		}
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs,
			field.Required(p.Child("validations"), "validations or auditAnnotations must contain at least one item"),
			field.Required(p.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
		return errs
	}
	for i, v := range spec.Validations {
		errs = append(errs, validateValidation(compiler, &v, hasParams, opts, p.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(p.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		if vap.Name != "" {
			for _, msg := range utilvalidation.IsQualifiedName(vap.Name + "/" + a.Key) {
				errs = append(errs, field.Invalid(ap.Child("key"), vap.Name+"/"+a.Key, msg))
			}
		} else {
			errs = append(errs, field.Invalid(ap.Child("key"), a.Key, "requires metadata.name be non-empty"))
		}
		switch expr := strings.TrimSpace(a.ValueExpression); {
		case expr == "":
			errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		case len(expr) > maxAuditAnnotationValueExpressionLength:
			errs = append(errs, field.Required(ap.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
		default:
			errs = append(errs, compileCEL(compiler, &validatingpolicy.AuditAnnotationCondition{ValueExpression: expr}, vars,
				opts.envType(a.ValueExpression), ap.Child("valueExpression"))...)
		}
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

func validateValidation(c plugincel.Compiler, v *admissionregistrationv1.Validation, hasParams bool, opts admissionValidation, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	msg, msgExpr := strings.TrimSpace(v.Message), strings.TrimSpace(v.MessageExpression)
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compileCEL(c, &validatingpolicy.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, opts.envType(v.Expression), p.Child("expression"))...)
	}
	if v.MessageExpression != "" && msgExpr == "" {
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if msgExpr != "" {
		errs = append(errs, compileCEL(c, &validatingpolicy.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams}, opts.envType(v.MessageExpression), p.Child("messageExpression"))...)
	}
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	} else if newlines.MatchString(msg) {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !in(string(*v.Reason), supportedValidationReasons) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, supportedValidationReasons))
	}
	return errs
}

var newlines = regexp.MustCompile(`[\n\r]+`)

func validateParamKind(pk admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pk.APIVersion == "" {
		errs = append(errs, field.Required(p.Child("apiVersion"), ""))
	} else {
		group, version := "", pk.APIVersion
		switch strings.Count(pk.APIVersion, "/") {
		case 0:
		case 1:
			group, version, _ = strings.Cut(pk.APIVersion, "/")
		default:
			errs = append(errs, field.Invalid(p.Child("apiVersion"), pk.APIVersion, fmt.Sprintf("unexpected GroupVersion string: %v", pk.APIVersion)))
			version = "-"
		}
		if group != "" {
			if msgs := utilvalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), group, strings.Join(msgs, ",")))
			}
		}
		switch {
		case version == "":
			errs = append(errs, field.Invalid(p.Child("apiVersion"), pk.APIVersion, "version must be specified"))
		case version != "-":
			if msgs := utilvalidation.IsDNS1035Label(version); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("apiVersion"), version, strings.Join(msgs, ",")))
			}
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	} else if !in(string(*m.MatchPolicy), supportedMatchPolicies) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, supportedMatchPolicies))
	}
	if m.NamespaceSelector == nil {
		errs = append(errs, field.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, field.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	for name, rules := range map[string][]admissionregistrationv1.NamedRuleWithOperations{"resourceRules": m.ResourceRules, "excludeResourceRules": m.ExcludeResourceRules} {
		for i := range rules {
			errs = append(errs, validateNamedRule(&rules[i], p.Child(name).Index(i))...)
		}
	}
	return errs
}

func validateNamedRule(n *admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, name := range n.ResourceNames {
		for _, msg := range path.ValidatePathSegmentName(name, false) {
			errs = append(errs, field.Invalid(p.Child("resourceNames").Index(i), name, msg))
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(p.Child("resourceNames").Index(i), name))
		}
		names.Insert(name)
	}
	return append(errs, validateRuleWithOperations(&n.RuleWithOperations, p)...)
}

func validateValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if b.Spec.PolicyName == "" {
		errs = append(errs, field.Required(p.Child("policyName"), ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(b.Spec.PolicyName) {
			errs = append(errs, field.Invalid(p.Child("policyName"), b.Spec.PolicyName, msg))
		}
	}
	if pr := b.Spec.ParamRef; pr != nil {
		pp := p.Child("paramRef")
		if pr.Name != "" {
			for _, msg := range path.ValidatePathSegmentName(pr.Name, false) {
				errs = append(errs, field.Invalid(pp.Child("name"), pr.Name, msg))
			}
			if pr.Selector != nil {
				errs = append(errs, field.Forbidden(pp.Child("name"), `name and selector are mutually exclusive`))
			}
		}
		if pr.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, pp.Child("selector"))...)
			if pr.Name != "" {
				errs = append(errs, field.Forbidden(pp.Child("selector"), `name and selector are mutually exclusive`))
			}
		}
		if pr.Name == "" && pr.Selector == nil {
			errs = append(errs, field.Required(pp, `one of name or selector must be specified`))
		}
		switch a := pr.ParameterNotFoundAction; {
		case a == nil || *a == "":
			errs = append(errs, field.Required(pp.Child("parameterNotFoundAction"), ""))
		case *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction:
			errs = append(errs, field.NotSupported(pp.Child("parameterNotFoundAction"), pr.ParameterNotFoundAction,
				[]string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
		}
	}
	errs = append(errs, validateMatchResources(b.Spec.MatchResources, p.Child("matchResources"))...)
	vp := p.Child("validationActions")
	actions := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range b.Spec.ValidationActions {
		if !in(string(a), supportedValidationActions) {
			errs = append(errs, field.NotSupported(vp.Index(i), a, supportedValidationActions))
		}
		if actions.Has(a) {
			errs = append(errs, field.Duplicate(vp.Index(i), a))
		}
		actions.Insert(a)
	}
	if actions.Has(admissionregistrationv1.Deny) && actions.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(vp, b.Spec.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if actions.Len() == 0 {
		errs = append(errs, field.Required(vp, "at least one validation action is required"))
	}
	return errs
}

func validateValidatingAdmissionPolicyStatus(st *admissionregistrationv1.ValidatingAdmissionPolicyStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tc := st.TypeChecking; tc != nil {
		wp := p.Child("typeChecking", "expressionWarnings")
		for i, w := range tc.ExpressionWarnings {
			if w.Warning == "" {
				errs = append(errs, field.Required(wp.Index(i).Child("warning"), ""))
			}
			ref := strings.TrimSpace(w.FieldRef)
			if ref == "" {
				errs = append(errs, field.Required(wp.Index(i).Child("fieldRef"), ""))
			} else if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
				errs = append(errs, field.Invalid(wp.Index(i).Child("fieldRef"), ref, fmt.Sprintf("invalid JSONPath: %v", err)))
			}
		}
	}
	return append(errs, metav1validation.ValidateConditions(st.Conditions, p.Child("conditions"))...)
}

var (
	celIdent    = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
	celReserved = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

func isCELIdentifier(name string) bool { return celIdent.MatchString(name) && !celReserved.Has(name) }

func in(s string, set []string) bool { return slices.Contains(set, s) }

func sideEffect(se *admissionregistrationv1.SideEffectClass) string {
	if se == nil {
		return ""
	}
	return string(*se)
}

func hasAccepted(versions []string) bool {
	return slices.ContainsFunc(versions, func(v string) bool { return in(v, acceptedAdmissionReviewVersion) })
}

func validSelectors(sels ...*metav1.LabelSelector) bool {
	for _, s := range sels {
		if s != nil && len(metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return false
		}
	}
	return true
}

func allHooks[H any](hooks []H, ok func(H) bool) bool {
	for _, h := range hooks {
		if !ok(h) {
			return false
		}
	}
	return true
}

func allIndexed[H any](hooks []H, ok func(int, H) bool) bool {
	for i, h := range hooks {
		if !ok(i, h) {
			return false
		}
	}
	return true
}

func uniqueNames[H any](hooks []H, name func(H) string) bool {
	seen := sets.New[string]()
	for _, h := range hooks {
		n := name(h)
		if seen.Has(n) {
			return false
		}
		seen.Insert(n)
	}
	return true
}

func semanticEqual(a, b any) bool { return !semanticChanged(a, b) }
