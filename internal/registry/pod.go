package registry

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/protoprune"
)

func podResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.Pod]{behavior[*corev1.Pod]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		// Pods track generation since PodObservedGenerationTracking: the
		// spec is mostly immutable, so in practice image and toleration
		// updates bump it.
		specChanged: func(obj, old *corev1.Pod) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(p *corev1.Pod) { p.Status = corev1.PodStatus{} },
		keepStatus:  func(obj, old *corev1.Pod) { obj.Status = old.Status },
		keepSpec: func(obj, old *corev1.Pod) {
			obj.Spec = old.Spec
			// Old kubelets corrupted owner references through status
			// writes, so upstream never lets pods/status touch them; QoS
			// class is fixed at creation.
			obj.OwnerReferences = old.OwnerReferences
			obj.Status.QOSClass = old.Status.QOSClass
		},
		defaults:      defaultPod,
		prepareCreate: preparePodCreate,
		validate:      func(p *corev1.Pod) field.ErrorList { return validatePodSpec(&p.Spec, field.NewPath("spec")) },
		// Ephemeral containers join a running pod through
		// pods/ephemeralcontainers only.
		validateCreate: func(p *corev1.Pod) field.ErrorList {
			if len(p.Spec.EphemeralContainers) > 0 {
				return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
			}
			return nil
		},
		validateUpdate: validatePodUpdate,
		validateStatus: validatePodStatus,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Pod",
		Resource:         "pods",
		SingularName:     "pod",
		Namespaced:       true,
		ShortNames:       []string{"po"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status", "binding", "eviction", "ephemeralcontainers", "resize", "attach", "exec", "log", "portforward", "proxy"},
		New:              func() runtime.Object { return &corev1.Pod{} },
		NewList:          func() runtime.Object { return &corev1.PodList{} },
		Strategy:         s,
		Status:           statusOf(s),
		Parts:            map[string]StatusStrategy{"ephemeralcontainers": podEphemeralContainersStrategy, "resize": podResizeStrategy},
		SelectableFields: func(o runtime.Object) fields.Set { return podFields(o.(*corev1.Pod)) },
		IndexSkip:        podIndexSkip,
		Table:            podTable(c),
		StorageKeyPrefix: storagePrefix(gv, "pods"),
	}
}

// defaultPod applies scheme defaults plus what the admission plugins users
// always see would add: default tolerations, priority and service account.
func defaultPod(p *corev1.Pod) {
	defaultPodSpec(&p.Spec)
	defaultTolerations(&p.Spec)
	defaultPriority(&p.Spec)
	// v1's two spellings are one field upstream (its conversion fills
	// each from the other). Naming the "default" account when neither is
	// set is the ServiceAccount admission plugin's job, not a default:
	// mirror pods must keep none.
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = p.Spec.DeprecatedServiceAccount
	}
	if p.Spec.DeprecatedServiceAccount == "" {
		p.Spec.DeprecatedServiceAccount = p.Spec.ServiceAccountName
	}
}

// defaultPriority mirrors the Priority admission plugin where it needs no
// lookup: no class means priority 0 (absent a global default class), and
// the two system classes have fixed values.
func defaultPriority(s *corev1.PodSpec) {
	if s.Priority == nil {
		if s.PriorityClassName == "" {
			s.Priority = ptrTo(int32(0))
		} else if v, ok := SystemPriorityClasses()[s.PriorityClassName]; ok {
			s.Priority = ptrTo(v)
		}
	}
	if s.Priority != nil && s.PreemptionPolicy == nil {
		s.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
	}
}

// preparePodCreate sets the status a new pod starts with.
func preparePodCreate(p *corev1.Pod) {
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podQOS(&p.Spec)}
	if len(p.Spec.SchedulingGates) > 0 {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		})
	}
}

// PodQOS is the QoS class of a pod with spec s, for admission plugins
// that change its resources after the strategy set status.qosClass
// (LimitRanger) and for quota's BestEffort scope.
func PodQOS(s *corev1.PodSpec) corev1.PodQOSClass { return podQOS(s) }

// podQOS is upstream's GetPodQOS over cpu and memory of all containers.
func podQOS(s *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	containers := append(append([]corev1.Container(nil), s.Containers...), s.InitContainers...)
	for _, c := range containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[name]; ok && !q.IsZero() {
				addQuantity(requests, name, q)
			}
			if q, ok := c.Resources.Limits[name]; ok && !q.IsZero() {
				addQuantity(limits, name, q)
			} else {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func addQuantity(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := l[name]
	sum.Add(q)
	l[name] = sum
}

// podUpdateForbiddenMsg is upstream's message for a forbidden spec change.
const podUpdateForbiddenMsg = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// validatePodUpdate enforces that a pod's spec is immutable except for the
// fields upstream lets users change.
func validatePodUpdate(obj, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if a, o := obj.Spec.ActiveDeadlineSeconds, old.Spec.ActiveDeadlineSeconds; o != nil {
		switch {
		case a == nil:
			errs = append(errs, field.Invalid(sp.Child("activeDeadlineSeconds"), a, "must not update from a positive integer to nil value"))
		case *a > *o:
			errs = append(errs, field.Invalid(sp.Child("activeDeadlineSeconds"), *a, "must be less than or equal to previous value"))
		}
	}
	errs = append(errs, validateOnlyAddedTolerations(obj.Spec.Tolerations, old.Spec.Tolerations, sp.Child("tolerations"))...)

	// Compare with everything mutable copied over from the new spec.
	mutated := old.Spec.DeepCopy()
	if len(mutated.Containers) == len(obj.Spec.Containers) {
		for i := range mutated.Containers {
			mutated.Containers[i].Image = obj.Spec.Containers[i].Image
		}
	}
	if len(mutated.InitContainers) == len(obj.Spec.InitContainers) {
		for i := range mutated.InitContainers {
			mutated.InitContainers[i].Image = obj.Spec.InitContainers[i].Image
		}
	}
	mutated.ActiveDeadlineSeconds = obj.Spec.ActiveDeadlineSeconds
	mutated.Tolerations = obj.Spec.Tolerations
	// Scheduling gates may only be removed; the scheduler's binding sets
	// nodeName through pods/binding, never through an update.
	if len(obj.Spec.SchedulingGates) <= len(old.Spec.SchedulingGates) {
		mutated.SchedulingGates = obj.Spec.SchedulingGates
	}
	if g := old.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 && obj.Spec.TerminationGracePeriodSeconds != nil && *obj.Spec.TerminationGracePeriodSeconds == 1 {
		mutated.TerminationGracePeriodSeconds = obj.Spec.TerminationGracePeriodSeconds
	}
	if semanticChanged(*mutated, obj.Spec) {
		errs = append(errs, field.Forbidden(sp, podUpdateForbiddenMsg))
	}
	return errs
}

// validateOnlyAddedTolerations: every old toleration must still be there,
// with only its tolerationSeconds possibly changed.
func validateOnlyAddedTolerations(now, old []corev1.Toleration, p *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, n := range now {
			o.TolerationSeconds, n.TolerationSeconds = nil, nil
			if o.MatchToleration(&n) && o.Value == n.Value {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(p, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

// validatePodStatus checks what kubelets and schedulers write: a
// well-formed nominated node and pod IPs, at most one per family.
func validatePodStatus(obj, _ *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("status")
	if n := obj.Status.NominatedNodeName; n != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n, false) {
			errs = append(errs, field.Invalid(sp.Child("nominatedNodeName"), n, msg))
		}
	}
	families := map[bool]bool{}
	for i, ip := range obj.Status.PodIPs {
		parsed := net.ParseIP(ip.IP)
		if parsed == nil {
			errs = append(errs, field.Invalid(sp.Child("podIPs").Index(i), ip.IP, "must be a valid IP address"))
			continue
		}
		v4 := parsed.To4() != nil
		if families[v4] {
			errs = append(errs, field.Invalid(sp.Child("podIPs"), obj.Status.PodIPs, "may specify no more than one IP for each IP family"))
		}
		families[v4] = true
	}
	return errs
}

// podFields are upstream's pod field-selector fields.
// podIndexSkip is what of a Pod's protobuf message podFields does not
// read (field numbers from k8s.io/api/core/v1/generated.proto). Keep the
// two in step: apiserver's TestDecodeForIndex checks them.
var podIndexSkip = protoprune.Fields{
	2: { // spec
		1:  nil, // volumes
		2:  nil, // containers
		18: nil, // affinity
		20: nil, // initContainers
		22: nil, // tolerations
		33: nil, // topologySpreadConstraints
		34: nil, // ephemeralContainers
	},
	3: { // status
		2:  nil, // conditions
		8:  nil, // containerStatuses
		10: nil, // initContainerStatuses
		13: nil, // ephemeralContainerStatuses
	},
}

func podFields(p *corev1.Pod) fields.Set {
	podIP := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	}
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}
