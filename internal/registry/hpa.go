package registry

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const autoscalingGroup = "autoscaling"

// HorizontalPodAutoscalers are served in autoscaling/v2 and autoscaling/v1
// and stored in v2 (hpa_conversion.go); v1 follows v2's rules through the
// conversion, as upstream validates both as its internal version.

func hpaV2Strategy() strategy[*autoscalingv2.HorizontalPodAutoscaler] {
	return strategy[*autoscalingv2.HorizontalPodAutoscaler]{behavior[*autoscalingv2.HorizontalPodAutoscaler]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *autoscalingv2.HorizontalPodAutoscaler) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
		},
		keepStatus: func(obj, old *autoscalingv2.HorizontalPodAutoscaler) { obj.Status = old.Status },
		keepSpec:   func(obj, old *autoscalingv2.HorizontalPodAutoscaler) { obj.Spec = old.Spec },
		defaults:   defaultHPA,
		validate:   validateHPA,
		validateStatus: func(obj, _ *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
			p := field.NewPath("status")
			errs := validateNonnegative(obj.Status.CurrentReplicas, p.Child("currentReplicas"))
			return append(errs, validateNonnegative(obj.Status.DesiredReplicas, p.Child("desiredReplicas"))...)
		},
	}}
}

func hpaV2Resource(c clock) *Resource {
	gv := schema2(autoscalingGroup)
	s := hpaV2Strategy()
	return &Resource{
		GroupVersion:     gv,
		Kind:             "HorizontalPodAutoscaler",
		Resource:         "horizontalpodautoscalers",
		SingularName:     "horizontalpodautoscaler",
		Namespaced:       true,
		ShortNames:       []string{"hpa"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewList:          func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            hpaTable(c),
		StorageKeyPrefix: storagePrefix(gv, "horizontalpodautoscalers"),
	}
}

func hpaV1Resource(c clock) *Resource {
	// The same resource as v2 (names, verbs, subresources, storage), with
	// v1's types and v2's rules through the conversion.
	r := hpaV2Resource(c)
	via := viaStorage{
		newStorage: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		toStorage: func(in, out runtime.Object) error {
			return hpaV1ToV2(in.(*autoscalingv1.HorizontalPodAutoscaler), out.(*autoscalingv2.HorizontalPodAutoscaler))
		},
		fromStorage: func(in, out runtime.Object) error {
			return hpaV2ToV1(in.(*autoscalingv2.HorizontalPodAutoscaler), out.(*autoscalingv1.HorizontalPodAutoscaler))
		},
		strategy: r.Strategy,
		status:   r.Status,
	}
	r.GroupVersion = v1(autoscalingGroup)
	r.New = func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} }
	r.NewList = func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} }
	r.Strategy, r.Status = via, via
	r.Table = viaStorageTable{v: via, table: r.Table}
	r.StorageVersion = schema2(autoscalingGroup)
	return r
}

// schema2 is group's v2.
func schema2(group string) schema.GroupVersion {
	return schema.GroupVersion{Group: group, Version: "v2"}
}

// defaultHPA is upstream's SetDefaults_HorizontalPodAutoscaler for v2.
func defaultHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		one := int32(1)
		h.Spec.MinReplicas = &one
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(hpaDefaultCPUUtilization)}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = defaultScalingRules(b.ScaleUp, 0, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
		b.ScaleDown = defaultScalingRules(b.ScaleDown, 300, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		})
	}
}

// defaultScalingRules fills what a scaling direction leaves unset, as
// upstream's GenerateHPAScale{Up,Down}Rules, without touching the caller's
// rules (they may be shared with a cached object).
func defaultScalingRules(r *autoscalingv2.HPAScalingRules, window int32, policies []autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	out := &autoscalingv2.HPAScalingRules{}
	if r != nil {
		*out = *r
	}
	if out.StabilizationWindowSeconds == nil {
		out.StabilizationWindowSeconds = &window
	}
	if out.SelectPolicy == nil {
		maxPolicy := autoscalingv2.MaxChangePolicySelect
		out.SelectPolicy = &maxPolicy
	}
	if len(out.Policies) == 0 {
		out.Policies = policies
	}
	return out
}

// validateHPA is upstream's ValidateHorizontalPodAutoscaler for the spec.
func validateHPA(h *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	p := field.NewPath("spec")
	spec := h.Spec
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateScaleTargetRef(spec.ScaleTargetRef, p.Child("scaleTargetRef"))...)
	for i, m := range spec.Metrics {
		errs = append(errs, validateMetricSpec(m, p.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		bp := p.Child("behavior")
		errs = append(errs, validateScalingRules(b.ScaleUp, bp.Child("scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, bp.Child("scaleDown"))...)
	}
	return errs
}

func validateScaleTargetRef(ref autoscalingv2.CrossVersionObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(p.Child("kind"), ref.Kind, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

var metricSourceTypes = []string{"ContainerResource", "External", "Object", "Pods", "Resource"}

// validateMetricSpec checks that the source named by type, and only it, is
// set, and that its target fits the source, as upstream's validateMetricSpec.
func validateMetricSpec(m autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		return append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	set := map[autoscalingv2.MetricSourceType]bool{
		autoscalingv2.ObjectMetricSourceType: m.Object != nil, autoscalingv2.PodsMetricSourceType: m.Pods != nil,
		autoscalingv2.ResourceMetricSourceType: m.Resource != nil, autoscalingv2.ContainerResourceMetricSourceType: m.ContainerResource != nil,
		autoscalingv2.ExternalMetricSourceType: m.External != nil,
	}
	known, n := false, 0
	for t, ok := range set {
		if t == m.Type {
			known = true
		}
		if ok {
			n++
		}
	}
	if !known {
		return append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
	}
	if !set[m.Type] {
		errs = append(errs, field.Required(p.Child(metricField(m.Type)), "must populate information for the given metric source"))
	}
	if n > 1 {
		errs = append(errs, field.Forbidden(p, "must populate the given metric source only"))
	}
	switch {
	case m.Object != nil:
		op := p.Child("object")
		errs = append(errs, validateScaleTargetRef(m.Object.DescribedObject, op.Child("describedObject"))...)
		errs = append(errs, validateMetricIdentifier(m.Object.Metric, op.Child("metric"))...)
		errs = append(errs, validateMetricTarget(m.Object.Target, op.Child("target"))...)
		if m.Object.Target.Value == nil && m.Object.Target.AverageValue == nil {
			errs = append(errs, field.Required(op.Child("target", "averageValue"), "must set either a target value or averageValue"))
		}
	case m.Pods != nil:
		pp := p.Child("pods")
		errs = append(errs, validateMetricIdentifier(m.Pods.Metric, pp.Child("metric"))...)
		errs = append(errs, validateMetricTarget(m.Pods.Target, pp.Child("target"))...)
		if m.Pods.Target.AverageValue == nil {
			errs = append(errs, field.Required(pp.Child("target", "averageValue"), "must specify a positive target averageValue"))
		}
	case m.Resource != nil:
		errs = append(errs, validateResourceTarget(string(m.Resource.Name), m.Resource.Target, p.Child("resource"))...)
	case m.ContainerResource != nil:
		cp := p.Child("containerResource")
		errs = append(errs, validateResourceTarget(string(m.ContainerResource.Name), m.ContainerResource.Target, cp)...)
		if m.ContainerResource.Container == "" {
			errs = append(errs, field.Required(cp.Child("container"), "must populate container name"))
		}
	case m.External != nil:
		ep := p.Child("external")
		errs = append(errs, validateMetricIdentifier(m.External.Metric, ep.Child("metric"))...)
		errs = append(errs, validateMetricTarget(m.External.Target, ep.Child("target"))...)
		if m.External.Target.Value == nil && m.External.Target.AverageValue == nil {
			errs = append(errs, field.Required(ep.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
		}
	}
	return errs
}

func metricField(t autoscalingv2.MetricSourceType) string {
	s := string(t)
	return strings.ToLower(s[:1]) + s[1:]
}

func validateResourceTarget(name string, t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	errs = append(errs, validateMetricTarget(t, p.Child("target"))...)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if id.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a metric name"))
	} else {
		for _, msg := range path.IsValidPathSegmentName(id.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
		}
	}
	if id.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(id.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	}
	return errs
}

var metricTargetTypes = []string{"AverageValue", "Utilization", "Value"}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch t.Type {
	case "":
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	case autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), t.Type, metricTargetTypes))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

var selectPolicies = []string{"Disabled", "Max", "Min"}

// validateScalingRules is upstream's validateScalingRules: the window at
// most an hour, known policies with positive values and periods up to 30
// minutes.
func validateScalingRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must be less than or equal to 3600 and greater than or equal to 0"))
	}
	if sp := r.SelectPolicy; sp != nil {
		switch *sp {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			errs = append(errs, field.NotSupported(p.Child("selectPolicy"), *sp, selectPolicies))
		}
	}
	if len(r.Policies) == 0 && (r.SelectPolicy == nil || *r.SelectPolicy != autoscalingv2.DisabledPolicySelect) {
		errs = append(errs, field.Required(p.Child("policies"), "must specify at least one Policy"))
	}
	for i, pol := range r.Policies {
		pp := p.Child("policies").Index(i)
		switch pol.Type {
		case autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy:
		default:
			errs = append(errs, field.NotSupported(pp.Child("type"), pol.Type, []string{"Percent", "Pods"}))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 || pol.PeriodSeconds > 1800 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero and less than or equal to 1800"))
		}
	}
	return errs
}

// hpaTable is upstream's printHorizontalPodAutoscaler.
func hpaTable(c clock) TableConvertor {
	return table[*autoscalingv2.HorizontalPodAutoscaler]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
			col("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
			col("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
			col("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
			col("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
			ageColumn(),
		},
		cells: func(h *autoscalingv2.HorizontalPodAutoscaler) []interface{} {
			ref := h.Spec.ScaleTargetRef
			minPods := "<unset>"
			if h.Spec.MinReplicas != nil {
				minPods = fmt.Sprint(*h.Spec.MinReplicas)
			}
			return []interface{}{h.Name, ref.Kind + "/" + ref.Name, hpaTargets(h), minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), c.since(h.CreationTimestamp)}
		},
	}
}

// hpaTargets is upstream's formatHPAMetrics: "current/target" per metric,
// at most two, then "+ N more...".
func hpaTargets(h *autoscalingv2.HorizontalPodAutoscaler) string {
	specs := h.Spec.Metrics
	if len(specs) == 0 {
		return "<none>"
	}
	const shown = 2
	var list []string
	for i, spec := range specs {
		if i >= shown {
			break
		}
		target, prefix, ok := metricTarget(spec)
		switch {
		case ok:
			var current *autoscalingv2.MetricValueStatus
			if i < len(h.Status.CurrentMetrics) {
				current = metricCurrent(h.Status.CurrentMetrics[i], spec.Type)
			}
			list = append(list, hpaPair(current, target, prefix))
		case !slices.Contains(metricSourceTypes, string(spec.Type)):
			list = append(list, "<unknown type>")
		}
	}
	out := strings.Join(list, ", ")
	if more := len(specs) - shown; more > 0 {
		return fmt.Sprintf("%s + %d more...", out, more)
	}
	return out
}

// metricTarget is the target of the source spec's type names, and the
// printer's prefix for it; false when that source is missing.
func metricTarget(spec autoscalingv2.MetricSpec) (autoscalingv2.MetricTarget, string, bool) {
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		return spec.External.Target, "", true
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		return spec.Pods.Target, "", true
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		return spec.Object.Target, "", true
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		return spec.Resource.Target, string(spec.Resource.Name) + ": ", true
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		return spec.ContainerResource.Target, string(spec.ContainerResource.Name) + ": ", true
	}
	return autoscalingv2.MetricTarget{}, "", false
}

// metricCurrent is the current value a metric status holds for a source
// of type t, nil if it holds none.
func metricCurrent(st autoscalingv2.MetricStatus, t autoscalingv2.MetricSourceType) *autoscalingv2.MetricValueStatus {
	switch {
	case t == autoscalingv2.ExternalMetricSourceType && st.External != nil:
		return &st.External.Current
	case t == autoscalingv2.PodsMetricSourceType && st.Pods != nil:
		return &st.Pods.Current
	case t == autoscalingv2.ObjectMetricSourceType && st.Object != nil:
		return &st.Object.Current
	case t == autoscalingv2.ResourceMetricSourceType && st.Resource != nil:
		return &st.Resource.Current
	case t == autoscalingv2.ContainerResourceMetricSourceType && st.ContainerResource != nil:
		return &st.ContainerResource.Current
	}
	return nil
}

// hpaPair prints one metric's current value over its target in the
// target's own terms (utilization as a percentage, values as quantities).
func hpaPair(v *autoscalingv2.MetricValueStatus, target autoscalingv2.MetricTarget, prefix string) string {
	current := "<unknown>"
	switch {
	case target.AverageUtilization != nil:
		if v != nil && v.AverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *v.AverageUtilization)
		}
		return fmt.Sprintf("%s%s/%d%%", prefix, current, *target.AverageUtilization)
	case target.AverageValue != nil:
		if v != nil && v.AverageValue != nil {
			current = v.AverageValue.String()
		}
		return fmt.Sprintf("%s%s/%s (avg)", prefix, current, target.AverageValue.String())
	case target.Value != nil:
		if v != nil && v.Value != nil {
			current = v.Value.String()
		}
		return fmt.Sprintf("%s%s/%s", prefix, current, target.Value.String())
	}
	return prefix + current + "/<unset>"
}
