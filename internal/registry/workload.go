package registry

import (
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Helpers shared by the apps/v1 workloads.

// scaleAccessor builds the ScaleAccessor of a scalable Kind from how to read
// its replicas and where to write them.
func scaleAccessor[T object](get func(T) (desired *int32, current int32, sel *metav1.LabelSelector), set func(T, int32)) *ScaleAccessor {
	return &ScaleAccessor{
		Scale: func(o runtime.Object) *autoscalingv1.Scale {
			obj := o.(T)
			desired, current, sel := get(obj)
			sc := &autoscalingv1.Scale{
				ObjectMeta: metav1.ObjectMeta{
					Name:              obj.GetName(),
					Namespace:         obj.GetNamespace(),
					UID:               obj.GetUID(),
					ResourceVersion:   obj.GetResourceVersion(),
					CreationTimestamp: obj.GetCreationTimestamp(),
				},
				Status: autoscalingv1.ScaleStatus{Replicas: current},
			}
			if desired != nil {
				sc.Spec.Replicas = *desired
			}
			if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && sel != nil {
				sc.Status.Selector = s.String()
			}
			return sc
		},
		SetReplicas: func(o runtime.Object, n int32) { set(o.(T), n) },
	}
}

// templateContainers renders the CONTAINERS and IMAGES wide columns.
func templateContainers(t *corev1.PodTemplateSpec) (names, images string) {
	var n, im []string
	for _, c := range t.Spec.Containers {
		n = append(n, c.Name)
		im = append(im, c.Image)
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// selectorString renders a selector as kubectl's SELECTOR column does.
func selectorString(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "<error>"
	}
	return s.String()
}

func containersColumn() metav1.TableColumnDefinition {
	return wide(col("Containers", "string", "Names of each container in the template."))
}

func imagesColumn() metav1.TableColumnDefinition {
	return wide(col("Images", "string", "Images referenced by each container in the template."))
}

func selectorColumn(desc string) metav1.TableColumnDefinition {
	return wide(col("Selector", "string", desc))
}

// validatePositiveIntOrPercent is upstream's ValidatePositiveIntOrPercent
// plus IsNotMoreThan100Percent.
func validatePositiveIntOrPercent(v *intstr.IntOrString, p *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		n, ok := percent(v.StrVal)
		if !ok {
			return append(errs, field.Invalid(p, v.StrVal, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"))
		}
		if n > 100 {
			errs = append(errs, field.Invalid(p, v.StrVal, "must not be greater than 100%"))
		}
	case intstr.Int:
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v.IntValue()), p)...)
	}
	return errs
}

// percent parses "N%".
func percent(s string) (int, bool) {
	if len(s) < 2 || s[len(s)-1] != '%' {
		return 0, false
	}
	n := 0
	for _, r := range s[:len(s)-1] {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}

// isZeroIntOrPercent reports 0 or "0%".
func isZeroIntOrPercent(v *intstr.IntOrString) bool {
	if v == nil {
		return true
	}
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	n, ok := percent(v.StrVal)
	return ok && n == 0
}

// count is one named status counter.
type count struct {
	name string
	v    int32
}

// validateReplicaCounts checks the status counters every workload carries,
// in the order given so error lists are deterministic.
func validateReplicaCounts(p *field.Path, counts ...count) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		errs = append(errs, validateNonnegative(c.v, p.Child(c.name))...)
	}
	return errs
}
