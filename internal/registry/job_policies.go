package registry

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of a Job's podFailurePolicy and successPolicy, as upstream's.
// The Job controller does not act on either yet (see its package doc); the
// API still refuses what upstream refuses, so manifests that pass here
// pass there.

// Upstream's limits.
const (
	maxPodFailurePolicyRules            = 20
	maxPodFailurePolicyExitCodes        = 255
	maxPodFailurePolicyConditions       = 20
	maxSuccessPolicyRules               = 20
	maxSuccessPolicySucceededIndexesLen = 64 * 1024
)

func validatePodFailurePolicy(sp *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := p.Child("rules")
	if n := len(sp.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, n, maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range sp.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range sp.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range sp.PodFailurePolicy.Rules {
		errs = append(errs, validatePodFailurePolicyRule(sp, &sp.PodFailurePolicy.Rules[i], rulesPath.Index(i), containers)...)
	}
	return errs
}

func validatePodFailurePolicyRule(sp *batchv1.JobSpec, r *batchv1.PodFailurePolicyRule, p *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	actions := []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	ap := p.Child("action")
	switch r.Action {
	case "":
		errs = append(errs, field.Required(ap, fmt.Sprintf("valid values: %q", actions)))
	case batchv1.PodFailurePolicyActionFailIndex:
		if sp.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(ap, r.Action, "requires the backoffLimitPerIndex to be set"))
		}
	default:
		errs = append(errs, validateOneOf(r.Action, ap, actions...)...)
	}
	if r.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(r.OnExitCodes, p.Child("onExitCodes"), containers)...)
	}
	if len(r.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(r.OnPodConditions, p.Child("onPodConditions"))...)
	}
	switch {
	case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	ops := []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}
	if r.Operator == "" {
		errs = append(errs, field.Required(p.Child("operator"), fmt.Sprintf("valid values: %q", ops)))
	} else {
		errs = append(errs, validateOneOf(r.Operator, p.Child("operator"), ops...)...)
	}
	if r.ContainerName != nil && !containers.Has(*r.ContainerName) {
		errs = append(errs, field.Invalid(p.Child("containerName"), *r.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	switch n := len(r.Values); {
	case n == 0:
		errs = append(errs, field.Invalid(vp, r.Values, "at least one value is required"))
	case n > maxPodFailurePolicyExitCodes:
		errs = append(errs, field.TooMany(vp, n, maxPodFailurePolicyExitCodes))
	}
	seen := sets.New[int32]()
	ordered := true
	for i, v := range r.Values {
		if r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(vp.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(vp.Index(i), v))
		}
		seen.Insert(v)
		if i > 0 && r.Values[i-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(vp, r.Values, "must be ordered"))
	}
	return errs
}

func validateOnPodConditions(conds []batchv1.PodFailurePolicyOnPodConditionsPattern, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxPodFailurePolicyConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxPodFailurePolicyConditions))
	}
	statuses := []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
	for i, c := range conds {
		cp := p.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(string(c.Type), cp.Child("type"))...)
		if c.Status == "" {
			errs = append(errs, field.Required(cp.Child("status"), fmt.Sprintf("valid values: %q", statuses)))
		} else {
			errs = append(errs, validateOneOf(c.Status, cp.Child("status"), statuses...)...)
		}
	}
	return errs
}

// validateSuccessPolicy: Indexed Jobs only; each rule names the indexes
// and/or a count of them that must succeed, within completions.
// specPath is the JobSpec's path (spec, or spec.jobTemplate.spec).
func validateSuccessPolicy(sp *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion {
		return append(errs, field.Invalid(specPath.Child("completionMode"), sp.CompletionMode, "requires indexed completion mode"))
	}
	rp := specPath.Child("successPolicy", "rules")
	rules := sp.SuccessPolicy.Rules
	switch {
	case len(rules) == 0:
		errs = append(errs, field.Required(rp, "at least one rules must be specified when the successPolicy is specified"))
	case len(rules) > maxSuccessPolicyRules:
		errs = append(errs, field.TooMany(rp, len(rules), maxSuccessPolicyRules))
	}
	completions := int32(0)
	if sp.Completions != nil {
		completions = *sp.Completions
	}
	for i, r := range rules {
		ip := rp.Index(i)
		if r.SucceededIndexes == nil && r.SucceededCount == nil {
			errs = append(errs, field.Required(ip, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var nIndexes int32 = -1
		if r.SucceededIndexes != nil {
			n, err := countIndexes(*r.SucceededIndexes, completions)
			switch {
			case len(*r.SucceededIndexes) > maxSuccessPolicySucceededIndexesLen:
				errs = append(errs, field.TooLong(ip.Child("succeededIndexes"), *r.SucceededIndexes, maxSuccessPolicySucceededIndexesLen))
			case err != nil:
				errs = append(errs, field.Invalid(ip.Child("succeededIndexes"), *r.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			default:
				nIndexes = n
			}
		}
		if c := r.SucceededCount; c != nil {
			cp := ip.Child("succeededCount")
			switch {
			case *c < 0:
				errs = append(errs, field.Invalid(cp, *c, "must be greater than or equal to 0"))
			case *c > completions:
				errs = append(errs, field.Invalid(cp, *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			case nIndexes >= 0 && *c > nIndexes:
				errs = append(errs, field.Invalid(cp, *c, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", nIndexes)))
			}
		}
	}
	return errs
}

// countIndexes parses an index list ("0-3,7,9-10", ascending, each below
// completions) and returns how many indexes it names.
func countIndexes(s string, completions int32) (int32, error) {
	var n int32
	last := int64(-1)
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string to integer for index: %q", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 32); err != nil {
				return 0, fmt.Errorf("cannot convert string to integer for index: %q", hi)
			}
		}
		switch {
		case a < 0 || b >= int64(completions):
			return 0, fmt.Errorf("too large index: %q", part)
		case a > b:
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", a, b)
		case a <= last:
			return 0, fmt.Errorf("overlapping indexes, previous: %d, current: %d", last, a)
		}
		n += int32(b - a + 1)
		last = b
	}
	return n, nil
}
