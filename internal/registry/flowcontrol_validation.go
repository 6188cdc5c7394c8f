package registry

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"
)

// Upstream's flowcontrol validation (pkg/apis/flowcontrol/validation),
// messages included, for the v1 types.

const (
	flowSchemaMaxMatchingPrecedence int32 = 10000
	plcMaxQueues                    int32 = 10 * 1000 * 1000
	nsErrIntro                            = "each member of this list must be '*' or a DNS-1123 label; "
)

var (
	fcSupportedVerbs         = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	fcSupportedDistinguisher = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	fcSupportedSubjectKinds  = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	fcSupportedPLTypes       = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	fcSupportedLimitResponse = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// MandatoryFlowSchemaSpec returns the fixed, defaulted spec of a mandatory
// FlowSchema (exempt, catch-all) and whether name is one.
func MandatoryFlowSchemaSpec(name string) (flowcontrolv1.FlowSchemaSpec, bool) {
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		if fs.Name == name {
			c := fs.DeepCopy()
			DefaultFlowSchema(c)
			return c.Spec, true
		}
	}
	return flowcontrolv1.FlowSchemaSpec{}, false
}

// MandatoryPriorityLevelSpec is MandatoryFlowSchemaSpec for priority levels.
func MandatoryPriorityLevelSpec(name string) (flowcontrolv1.PriorityLevelConfigurationSpec, bool) {
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		if pl.Name == name {
			c := pl.DeepCopy()
			DefaultPriorityLevelConfiguration(c)
			return c.Spec, true
		}
	}
	return flowcontrolv1.PriorityLevelConfigurationSpec{}, false
}

func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	sp := field.NewPath("spec")
	errs := validateFlowSchemaSpec(fs.Name, &fs.Spec, sp)
	if mand, ok := MandatoryFlowSchemaSpec(fs.Name); ok && !apiequality.Semantic.DeepEqual(fs.Spec, mand) {
		errs = append(errs, field.Invalid(sp, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateFlowSchemaStatus(&fs.Status)...)
}

func validateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("matchingPrecedence")
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > flowSchemaMaxMatchingPrecedence {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", flowSchemaMaxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !slices.Contains(fcSupportedDistinguisher, string(dm.Type)) {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), dm, fcSupportedDistinguisher))
	}
	plp := p.Child("priorityLevelConfiguration", "name")
	if pl := spec.PriorityLevelConfiguration.Name; pl != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(pl, false) {
			errs = append(errs, field.Invalid(plp, pl, msg))
		}
	} else {
		errs = append(errs, field.Required(plp, "must reference a priority level"))
	}
	for i := range spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&spec.Rules[i], p.Child("rules").Index(i))...)
	}
	return errs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourcePolicyRule(&rule.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourcePolicyRule(&rule.NonResourceRules[i], p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

func validateSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbidSA := func() {
		if s.ServiceAccount != nil {
			errs = append(errs, field.Forbidden(p.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
		}
	}
	forbidUser := func() {
		if s.User != nil {
			errs = append(errs, field.Forbidden(p.Child("user"), "user is forbidden when subject kind is not 'User'"))
		}
	}
	forbidGroup := func() {
		if s.Group != nil {
			errs = append(errs, field.Forbidden(p.Child("group"), "group is forbidden when subject kind is not 'Group'"))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		sp := p.Child("serviceAccount")
		switch sa := s.ServiceAccount; {
		case sa == nil:
			errs = append(errs, field.Required(sp, "serviceAccount is required when subject kind is 'ServiceAccount'"))
		default:
			if sa.Name == "" {
				errs = append(errs, field.Required(sp.Child("name"), ""))
			} else if sa.Name != flowcontrolv1.NameAll {
				for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
					errs = append(errs, field.Invalid(sp.Child("name"), sa.Name, msg))
				}
			}
			if sa.Namespace == "" {
				errs = append(errs, field.Required(sp.Child("namespace"), "must specify namespace for service account"))
			} else {
				for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
					errs = append(errs, field.Invalid(sp.Child("namespace"), sa.Namespace, msg))
				}
			}
		}
		forbidUser()
		forbidGroup()
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
		forbidSA()
		forbidGroup()
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
		forbidSA()
		forbidUser()
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, fcSupportedSubjectKinds))
	}
	return errs
}

func validateFCVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case slices.Contains(verbs, "*"):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(fcSupportedVerbs, v) {
				return field.ErrorList{field.NotSupported(p, verbs, fcSupportedVerbs)}
			}
		}
	}
	return nil
}

func validateNonResourcePolicyRule(rule *flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateFCVerbs(rule.Verbs, p.Child("verbs"))
	up := p.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		errs = append(errs, field.Required(up, "nonResourceURLs must contain at least one value"))
	case slices.Contains(rule.NonResourceURLs, "*"):
		if len(rule.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(up, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range rule.NonResourceURLs {
			if err := validateNonResourceURLPath(u, up.Index(i)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func validateResourcePolicyRule(rule *flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateFCVerbs(rule.Verbs, p.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && slices.Contains(rule.Resources, "*") {
		errs = append(errs, field.Invalid(p.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	np := p.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		errs = append(errs, field.Required(np, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(rule.Namespaces, "*"):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(np, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(np.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

// validateNonResourceURLPath: a leading slash, no white-space, no double
// slash, and "*" only as a "/*" suffix.
func validateNonResourceURLPath(path string, p *field.Path) *field.Error {
	switch {
	case path == "":
		return field.Invalid(p, path, "must not be empty")
	case path == "/":
		return nil
	case !strings.HasPrefix(path, "/"):
		return field.Invalid(p, path, "must start with slash")
	case strings.Contains(path, " "):
		return field.Invalid(p, path, "must not contain white-space")
	case strings.Contains(path, "//"):
		return field.Invalid(p, path, "must not contain double slash")
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && !strings.HasSuffix(path, "/*")) {
		return field.Invalid(p, path, "wildcard can only do suffix matching")
	}
	return nil
}

func validateFlowSchemaStatus(st *flowcontrolv1.FlowSchemaStatus) field.ErrorList {
	types := make([]string, len(st.Conditions))
	for i, c := range st.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types, field.NewPath("status", "conditions"))
}

func validatePLCStatus(st *flowcontrolv1.PriorityLevelConfigurationStatus) field.ErrorList {
	types := make([]string, len(st.Conditions))
	for i, c := range st.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types, field.NewPath("status", "conditions"))
}

func validateConditionTypes(types []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(types))
	for i, t := range types {
		if seen[t] {
			errs = append(errs, field.Duplicate(p.Index(i).Child("type"), t))
		}
		seen[t] = true
		if t == "" {
			errs = append(errs, field.Required(p.Index(i).Child("type"), ""))
		}
	}
	return errs
}

func validatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	var errs field.ErrorList
	// The round-trip annotation belongs to v1beta3's conversion alone.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	sp := field.NewPath("spec")
	errs = append(errs, validatePLCSpec(&pl.Spec, pl.Name, sp)...)
	if mand, ok := MandatoryPriorityLevelSpec(pl.Name); ok {
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			// Operators may tune the exempt level's shares and lending;
			// nothing else.
			have := pl.Spec.DeepCopy()
			have.Exempt = mand.Exempt
			if !apiequality.Semantic.DeepEqual(&mand, have) {
				errs = append(errs, field.Invalid(sp, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)))
			}
		} else if !apiequality.Semantic.DeepEqual(pl.Spec, mand) {
			errs = append(errs, field.Invalid(sp, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)))
		}
	}
	return append(errs, validatePLCStatus(&pl.Status)...)
}

func validatePLCSpec(spec *flowcontrolv1.PriorityLevelConfigurationSpec, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			ep := p.Child("exempt")
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(ep.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			if e.LendablePercent != nil && (*e.LendablePercent < 0 || *e.LendablePercent > 100) {
				errs = append(errs, field.Invalid(ep.Child("lendablePercent"), *e.LendablePercent, "must be between 0 and 100, inclusive"))
			}
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimitedPLC(spec.Limited, p.Child("limited"))...)
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, fcSupportedPLTypes))
	}
	return errs
}

func validateLimitedPLC(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	lp := p.Child("limitResponse")
	switch l.LimitResponse.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if l.LimitResponse.Queuing != nil {
			errs = append(errs, field.Forbidden(lp.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if q := l.LimitResponse.Queuing; q == nil {
			errs = append(errs, field.Required(lp.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
		} else {
			errs = append(errs, validateQueuing(q, lp.Child("queuing"))...)
		}
	default:
		errs = append(errs, field.NotSupported(lp.Child("type"), l.LimitResponse.Type, fcSupportedLimitResponse))
	}
	if v := l.LendablePercent; v != nil && (*v < 0 || *v > 100) {
		errs = append(errs, field.Invalid(p.Child("lendablePercent"), *v, "must be between 0 and 100, inclusive"))
	}
	if v := l.BorrowingLimitPercent; v != nil && *v < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *v, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateQueuing(q *flowcontrolv1.QueuingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(p.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > plcMaxQueues {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", plcMaxQueues)))
	}
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	default:
		if bits := shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)); bits > shufflesharding.MaxHashBits {
			errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize,
				fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
		}
	}
	return errs
}
