package quota

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Add returns a + b, a new list holding every name of either.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		sum, ok := out[k]
		if !ok {
			out[k] = v.DeepCopy()
			continue
		}
		sum.Add(v)
		out[k] = sum
	}
	return out
}

// SubtractWithNonNegativeResult returns a - b per name of a, never below
// zero: an update is charged what it adds, not refunded what it drops.
func SubtractWithNonNegativeResult(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	zero := resource.MustParse("0")
	for k, v := range a {
		d := v.DeepCopy()
		if o, ok := b[k]; ok {
			d.Sub(o)
		}
		if d.Cmp(zero) < 0 {
			d = zero.DeepCopy()
		}
		out[k] = d
	}
	return out
}

// Mask returns the entries of l whose names are in names.
func Mask(l corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := make(corev1.ResourceList, len(names))
	for _, n := range names {
		if v, ok := l[n]; ok {
			out[n] = v.DeepCopy()
		}
	}
	return out
}

// LessThanOrEqual reports whether every value of a that b also names is
// at most b's, and the names that are not.
func LessThanOrEqual(a, b corev1.ResourceList) (bool, []corev1.ResourceName) {
	var exceeded []corev1.ResourceName
	for k, limit := range b {
		if v, ok := a[k]; ok && v.Cmp(limit) > 0 {
			exceeded = append(exceeded, k)
		}
	}
	return len(exceeded) == 0, exceeded
}

// RemoveZeros returns l without its zero entries.
func RemoveZeros(l corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l))
	for k, v := range l {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// IsNegative returns the names of l's negative entries.
func IsNegative(l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k, v := range l {
		if v.Sign() < 0 {
			out = append(out, k)
		}
	}
	return out
}

// Equals reports whether a and b hold the same names with equal values.
func Equals(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		o, ok := b[k]
		if !ok || v.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// Names returns l's names, sorted.
func Names(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Contains reports whether names holds n.
func Contains(names []corev1.ResourceName, n corev1.ResourceName) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// Intersection returns the names of a that b holds too, without
// duplicates, in a's order.
func Intersection(a, b []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range a {
		if Contains(b, n) && !Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// PrettyPrint renders l as upstream's quota messages do: name=value
// pairs sorted by name, joined by commas.
func PrettyPrint(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for _, k := range Names(l) {
		v := l[k]
		parts = append(parts, string(k)+"="+v.String())
	}
	return strings.Join(parts, ",")
}

// PrettyPrintNames renders names sorted and comma-separated.
func PrettyPrintNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}
