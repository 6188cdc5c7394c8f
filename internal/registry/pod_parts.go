package registry

import (
	"context"
	"fmt"
	"reflect"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the two pod subresources that write a part of the pod's
// spec, as upstream's pkg/registry/core/pod/strategy.go: ephemeralcontainers
// (kubectl debug adds a container to a running pod) and resize (in-place
// changes of container cpu and memory). Both keep everything of the stored
// pod but their part, so a client may send the whole pod.

// podPartStrategy is a StatusStrategy over one part of a pod's spec.
type podPartStrategy struct {
	// keep copies into obj everything of old the subresource may not
	// change (upstream's dropNonEphemeralContainerUpdates /
	// dropNonResizeUpdates).
	keep func(obj, old *corev1.Pod)
	// validate is upstream's ValidatePodEphemeralContainersUpdate /
	// ValidatePodResize, past the metadata checks every part shares.
	validate func(obj, old *corev1.Pod) field.ErrorList
}

var _ StatusStrategy = podPartStrategy{}

func (s podPartStrategy) PrepareForStatusUpdate(_ context.Context, o, oldObj runtime.Object) {
	obj, old := o.(*corev1.Pod), oldObj.(*corev1.Pod)
	s.keep(obj, old)
	defaultPodSpec(&obj.Spec)
	// Upstream's updatePodGeneration: a part that changed the spec is a
	// new generation the kubelet reports as observed.
	obj.Generation = old.Generation
	if semanticChanged(obj.Spec, old.Spec) {
		obj.Generation++
	}
}

func (s podPartStrategy) ValidateStatusUpdate(_ context.Context, o, oldObj runtime.Object) field.ErrorList {
	obj, old := o.(*corev1.Pod), oldObj.(*corev1.Pod)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
	errs = append(errs, validatePodSpec(&obj.Spec, field.NewPath("spec"))...)
	return append(errs, s.validate(obj, old)...)
}

// resetMetaForPart is metav1.ResetObjectMetaForStatus: a spec part may not
// change what the owner of the object's metadata decides.
func resetMetaForPart(obj, old *corev1.Pod) {
	obj.DeletionTimestamp = old.DeletionTimestamp
	obj.Generation = old.Generation
	obj.SelfLink = old.SelfLink
	obj.Labels = old.Labels
	obj.Annotations = old.Annotations
	obj.Finalizers = old.Finalizers
	obj.OwnerReferences = old.OwnerReferences
}

// podEphemeralContainersStrategy serves pods/ephemeralcontainers: the
// spec's ephemeralContainers may only grow.
var podEphemeralContainersStrategy = podPartStrategy{
	keep: func(obj, old *corev1.Pod) {
		eph := obj.Spec.EphemeralContainers
		obj.Spec = *old.Spec.DeepCopy()
		obj.Status = old.Status
		resetMetaForPart(obj, old)
		obj.Spec.EphemeralContainers = eph
	},
	validate: validateEphemeralContainersUpdate,
}

// allowedEphemeralContainerFields is upstream's list of the fields an
// ephemeral container may set: a debugging container gets no ports,
// probes, lifecycle or resources, and new fields are refused until
// someone decides they fit.
var allowedEphemeralContainerFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath",
	"TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

func validateEphemeralContainersUpdate(obj, old *corev1.Pod) field.ErrorList {
	if isMirror(old) {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	var errs field.ErrorList
	sp := field.NewPath("spec", "ephemeralContainers")
	volumes := sets.New[string]()
	for _, v := range obj.Spec.Volumes {
		volumes.Insert(v.Name)
	}
	names, targets := sets.New[string](), sets.New[string]()
	for _, c := range obj.Spec.InitContainers {
		names.Insert(c.Name)
		targets.Insert(c.Name)
	}
	for _, c := range obj.Spec.Containers {
		names.Insert(c.Name)
		targets.Insert(c.Name)
	}
	for i := range obj.Spec.EphemeralContainers {
		ec, ip := &obj.Spec.EphemeralContainers[i], sp.Index(i)
		// validateContainer reports a name used by any container before
		// it as a duplicate, as upstream does.
		errs = append(errs, validateContainer((*corev1.Container)(&ec.EphemeralContainerCommon), names, volumes, ip)...)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(ip.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, validateFieldAllowList(ec.EphemeralContainerCommon, allowedEphemeralContainerFields, "cannot be set for an Ephemeral Container", ip)...)
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				errs = append(errs, field.Forbidden(ip.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(ip.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	// Existing ephemeral containers may be neither removed nor changed;
	// a patch need not keep their order.
	byName := make(map[string]*corev1.EphemeralContainer, len(obj.Spec.EphemeralContainers))
	for i := range obj.Spec.EphemeralContainers {
		byName[obj.Spec.EphemeralContainers[i].Name] = &obj.Spec.EphemeralContainers[i]
	}
	for _, o := range old.Spec.EphemeralContainers {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(sp, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !apiequality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(sp, fmt.Sprintf("existing ephemeral containers %q may not be changed\n", o.Name)))
		}
	}
	return errs
}

// validateFieldAllowList is upstream's: every field of the struct value
// not in allowed must be its zero value.
func validateFieldAllowList(value any, allowed sets.Set[string], msg string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	t, v := reflect.TypeOf(value), reflect.ValueOf(value)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		errs = append(errs, field.Forbidden(p.Child(string(unicode.ToLower(r))+f.Name[n:]), msg))
	}
	return errs
}

// podResizeStrategy serves pods/resize: containers' (and sidecars')
// resources and resizePolicy change, nothing else.
var podResizeStrategy = podPartStrategy{
	keep: func(obj, old *corev1.Pod) {
		// Added, removed, renamed or reordered containers stay as sent,
		// for validation to refuse.
		if len(obj.Spec.Containers) != len(old.Spec.Containers) || len(obj.Spec.InitContainers) != len(old.Spec.InitContainers) {
			return
		}
		containers, ok := mergeResizable(obj.Spec.Containers, old.Spec.Containers)
		if !ok {
			return
		}
		initContainers, ok := mergeResizable(obj.Spec.InitContainers, old.Spec.InitContainers)
		if !ok {
			return
		}
		obj.Spec = *old.Spec.DeepCopy()
		obj.Status = old.Status
		resetMetaForPart(obj, old)
		obj.Spec.Containers = containers
		obj.Spec.InitContainers = initContainers
	},
	validate: validatePodResize,
}

// mergeResizable returns old's containers with the resources and resize
// policies of now's; false when a container was renamed or moved.
func mergeResizable(now, old []corev1.Container) ([]corev1.Container, bool) {
	if len(now) == 0 {
		return now, true
	}
	out := make([]corev1.Container, len(old))
	for i := range old {
		if old[i].Name != now[i].Name {
			return nil, false
		}
		out[i] = *old[i].DeepCopy()
		out[i].Resources = now[i].Resources
		out[i].ResizePolicy = now[i].ResizePolicy
	}
	return out, true
}

// validatePodResize is upstream's ValidatePodResize.
func validatePodResize(obj, old *corev1.Pod) field.ErrorList {
	podLevel := func(p *corev1.Pod) bool {
		return p.Spec.Resources != nil && len(p.Spec.Resources.Requests)+len(p.Spec.Resources.Limits) > 0
	}
	root := field.NewPath("")
	switch {
	case podLevel(old) || podLevel(obj):
		return field.ErrorList{field.Forbidden(root, "pods with pod-level resources cannot be resized")}
	case isMirror(old):
		return field.ErrorList{field.Forbidden(root, "static pods cannot be resized")}
	case old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows:
		return field.ErrorList{field.Forbidden(root, "windows pods cannot be resized")}
	}
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if podQOS(&old.Spec) != podQOS(&obj.Spec) {
		errs = append(errs, field.Invalid(sp, obj.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(old) {
		errs = append(errs, field.Forbidden(sp, "Pod running on node without support for resize"))
	}
	if order := validateResizeOrdering(obj, old, sp); order != nil {
		return append(errs, order...)
	}
	for i, c := range old.Spec.InitContainers {
		if isRestartableInit(&c) {
			errs = append(errs, validateContainerResize(&obj.Spec.InitContainers[i].Resources, &c.Resources, sp.Child("initContainers").Index(i).Child("resources"))...)
		}
	}
	for i := range old.Spec.Containers {
		errs = append(errs, validateContainerResize(&obj.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources, sp.Child("containers").Index(i).Child("resources"))...)
	}

	// Only cpu and memory may change: put old's back and compare.
	munged := obj.Spec.DeepCopy()
	for i := range munged.Containers {
		keepOldCPUMemory(&munged.Containers[i], &old.Spec.Containers[i])
		if !apiequality.Semantic.DeepEqual(munged.Containers[i], old.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(sp, "only cpu and memory resources are mutable"))
		}
	}
	for i := range munged.InitContainers {
		c := &munged.InitContainers[i]
		switch {
		case isRestartableInit(c):
			keepOldCPUMemory(c, &old.Spec.InitContainers[i])
			if !apiequality.Semantic.DeepEqual(*c, old.Spec.InitContainers[i]) {
				errs = append(errs, field.Forbidden(sp, "only cpu and memory resources for sidecar containers are mutable"))
			}
		case !apiequality.Semantic.DeepEqual(*c, old.Spec.InitContainers[i]):
			errs = append(errs, field.Forbidden(sp, "resources for non-sidecar init containers are immutable"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(sp, "only cpu and memory resources are mutable"))
	}
	return errs
}

// resizeSupported is upstream's isPodResizeRequestSupported: a running
// container whose status reports no resources is on a node without
// in-place resize.
func resizeSupported(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func validateResizeOrdering(obj, old *corev1.Pod, sp *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(now, was []corev1.Container, name string) {
		p := sp.Child(name)
		if len(now) != len(was) {
			errs = append(errs, field.Forbidden(p, name+" may not be added or removed on resize"))
			return
		}
		for i := range was {
			if now[i].Name != was[i].Name {
				errs = append(errs, field.Forbidden(p.Index(i).Child("name"), name+" may not be renamed or reordered on resize"))
			}
		}
	}
	check(obj.Spec.Containers, old.Spec.Containers, "containers")
	check(obj.Spec.InitContainers, old.Spec.InitContainers, "initContainers")
	return errs
}

// validateContainerResize: requests and limits may change but not go away
// (upstream's validateContainerResize, whose NotRequired-policy memory
// limit rule applies only with the alpha InPlacePodVerticalScalingAllocatedStatus
// work and is not in v1.34).
func validateContainerResize(now, was *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(now.Requests, was.Requests) {
		errs = append(errs, field.Forbidden(p.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(now.Limits, was.Limits) {
		errs = append(errs, field.Forbidden(p.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func resourcesRemoved(now, was corev1.ResourceList) bool {
	if len(was) > len(now) {
		return true
	}
	for name := range was {
		if _, ok := now[name]; !ok {
			return true
		}
	}
	return false
}

// keepOldCPUMemory is upstream's dropCPUMemoryResourcesFromContainer: c's
// cpu and memory replaced by old's, so that what remains to compare is
// every other change.
func keepOldCPUMemory(c, old *corev1.Container) {
	munge := func(l, oldL corev1.ResourceList) corev1.ResourceList {
		if oldL == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range l {
			if k != corev1.ResourceCPU && k != corev1.ResourceMemory {
				out[k] = v
			}
		}
		for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if v, ok := oldL[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	c.Resources = corev1.ResourceRequirements{
		Limits:   munge(c.Resources.Limits, old.Resources.Limits),
		Requests: munge(c.Resources.Requests, old.Resources.Requests),
	}
}

func isMirror(p *corev1.Pod) bool {
	_, ok := p.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}
