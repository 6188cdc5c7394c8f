package limitranger

import (
	"context"

	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// Lister returns a namespace's LimitRanges, as the watch cache holds
// them; it is read on every pod and claim write, so it must be cheap.
// The LimitRanges returned are shared and must not be changed.
type Lister func(ctx context.Context, ns string) ([]*corev1.LimitRange, error)

// Annotation notes on a pod which defaults the plugin set.
const Annotation = "kubernetes.io/limit-ranger"

// Plugin is the LimitRanger admission plugin.
type Plugin struct {
	admission.Handler
	list Lister
}

var (
	_ admission.MutationInterface   = (*Plugin)(nil)
	_ admission.ValidationInterface = (*Plugin)(nil)
)

// New is the plugin reading LimitRanges through list.
func New(list Lister) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), list: list}
}

// supports is upstream's SupportsAttributes: pods on create (containers
// cannot change afterwards), persistentvolumeclaims on create and update,
// no subresource.
func supports(a *admission.Attributes) bool {
	if a.Subresource != "" || a.Object == nil || a.Resource.Group != "" {
		return false
	}
	switch a.Resource.Resource {
	case "pods":
		return a.Operation == admission.Create
	case "persistentvolumeclaims":
		return true
	}
	return false
}

// ranges returns the LimitRanges of a's namespace that apply, or none
// when a is not supported or its object is being deleted.
func (p *Plugin) ranges(ctx context.Context, a *admission.Attributes) ([]*corev1.LimitRange, error) {
	if !supports(a) {
		return nil, nil
	}
	if a.OldObject != nil {
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetDeletionTimestamp() != nil {
			return nil, nil
		}
	}
	return p.list(ctx, a.Namespace)
}

// Admit applies the Container defaults of the namespace's LimitRanges to
// a pod being created.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	lrs, err := p.ranges(ctx, a)
	if err != nil || len(lrs) == 0 {
		return err
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	for _, lr := range lrs {
		ApplyDefaults(lr, pod)
	}
	// The registry's strategy classified the pod before its defaults:
	// classify it again, as upstream's strategy (which runs after
	// mutating admission) would.
	pod.Status.QOSClass = registry.PodQOS(&pod.Spec)
	return nil
}

// Validate refuses a pod or claim that breaks a range.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	lrs, err := p.ranges(ctx, a)
	if err != nil || len(lrs) == 0 {
		return err
	}
	for _, lr := range lrs {
		var err error
		switch obj := a.Object.(type) {
		case *corev1.Pod:
			err = ValidatePod(lr, obj)
		case *corev1.PersistentVolumeClaim:
			err = ValidateClaim(lr, obj)
		}
		if err != nil {
			name := a.Name
			if m, merr := meta.Accessor(a.Object); merr == nil && m.GetName() != "" {
				name = m.GetName()
			}
			return apierrors.NewForbidden(a.GroupResource(), name, err)
		}
	}
	return nil
}

// ApplyDefaults sets lr's Container defaults on every container and init
// container of pod that leaves the resource unset, and notes what it set
// in the Annotation.
func ApplyDefaults(lr *corev1.LimitRange, pod *corev1.Pod) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = mergeContainer(&pod.Spec.Containers[i], requests, limits, "container", notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = mergeContainer(&pod.Spec.InitContainers[i], requests, limits, "init container", notes)
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

func mergeContainer(c *corev1.Container, requests, limits corev1.ResourceList, what string, notes []string) []string {
	set := func(dst *corev1.ResourceList, defaults corev1.ResourceList) []string {
		var names []string
		for k, v := range defaults {
			if _, ok := (*dst)[k]; ok {
				continue
			}
			if *dst == nil {
				*dst = corev1.ResourceList{}
			}
			(*dst)[k] = v.DeepCopy()
			names = append(names, string(k))
		}
		sort.Strings(names)
		return names
	}
	if r := set(&c.Resources.Requests, requests); len(r) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(r, ", "), what, c.Name))
	}
	if l := set(&c.Resources.Limits, limits); len(l) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(l, ", "), what, c.Name))
	}
	return notes
}

// ValidatePod checks pod against lr's Container items (each container
// and init container) and Pod items (the pod's effective requests and
// limits).
func ValidatePod(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for i := range pod.Spec.Containers {
				r := &pod.Spec.Containers[i].Resources
				errs = append(errs, check(item, r.Requests, r.Limits)...)
			}
			for i := range pod.Spec.InitContainers {
				r := &pod.Spec.InitContainers[i].Resources
				errs = append(errs, check(item, r.Requests, r.Limits)...)
			}
		case corev1.LimitTypePod:
			opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
			errs = append(errs, check(item, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// ValidateClaim checks a claim's requests against lr's
// PersistentVolumeClaim items: its limits are no user input.
func ValidateClaim(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		for _, k := range sortedNames(item.Min) {
			errs = appendErr(errs, minConstraint(string(item.Type), k, item.Min[k], pvc.Spec.Resources.Requests, nil))
		}
		for _, k := range sortedNames(item.Max) {
			errs = appendErr(errs, maxRequestConstraint(string(item.Type), k, item.Max[k], pvc.Spec.Resources.Requests))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// check applies item's min, max and ratio to one set of requests and
// limits, in name order so that messages are stable.
func check(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	t := string(item.Type)
	for _, k := range sortedNames(item.Min) {
		errs = appendErr(errs, minConstraint(t, k, item.Min[k], requests, limits))
	}
	for _, k := range sortedNames(item.Max) {
		errs = appendErr(errs, maxConstraint(t, k, item.Max[k], requests, limits))
	}
	for _, k := range sortedNames(item.MaxLimitRequestRatio) {
		errs = appendErr(errs, ratioConstraint(t, k, item.MaxLimitRequestRatio[k], requests, limits))
	}
	return errs
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// values returns request, limit and enforced at a common precision:
// milli-units unless a value would overflow them.
func values(req, lim, enforced resource.Quantity) (r, l, e int64) {
	r, l, e = req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		r, l, e = req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(t string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqOK := requests[name]
	lim, limOK := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !reqOK:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	case limOK && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(t string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqOK := requests[name]
	lim, limOK := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !limOK:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, t, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	case reqOK && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func maxRequestConstraint(t string, name corev1.ResourceName, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, ok := requests[name]
	r, _, e := values(req, resource.Quantity{}, enforced)
	switch {
	case !ok:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(t string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqOK := requests[name]
	lim, limOK := limits[name]
	r, l, _ := values(req, lim, enforced)
	if !reqOK || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, t, enforced.String())
	}
	if !limOK || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, t, enforced.String())
	}
	observed := float64(l) / float64(r)
	shown, maxRatio := observed, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		maxRatio = float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, t, enforced.String(), shown)
	}
	return nil
}
