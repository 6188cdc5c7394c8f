package registry

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// replicationControllerResource serves core/v1 replicationcontrollers, the
// ReplicaSet's predecessor with an equality-only selector. Unlike a
// ReplicaSet's, the selector stays mutable, as upstream.
func replicationControllerResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.ReplicationController]{behavior[*corev1.ReplicationController]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *corev1.ReplicationController) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(rc *corev1.ReplicationController) { rc.Status = corev1.ReplicationControllerStatus{} },
		keepStatus:  func(obj, old *corev1.ReplicationController) { obj.Status = old.Status },
		// Upstream's status strategy resets the spec only; metadata may
		// change through status as through the object.
		keepSpec: func(obj, old *corev1.ReplicationController) { obj.Spec = old.Spec },
		defaults: defaultReplicationController,
		validate: validateReplicationController,
		validateStatus: func(obj, _ *corev1.ReplicationController) field.ErrorList {
			return validateReplicationControllerStatus(&obj.Status, field.NewPath("status"))
		},
	}}
	return &Resource{
		GroupVersion: gv,
		Kind:         "ReplicationController",
		Resource:     "replicationcontrollers",
		SingularName: "replicationcontroller",
		Namespaced:   true,
		ShortNames:   []string{"rc"},
		Categories:   []string{"all"},
		Verbs:        allVerbs(),
		Subresources: []string{"status", "scale"},
		New:          func() runtime.Object { return &corev1.ReplicationController{} },
		NewList:      func() runtime.Object { return &corev1.ReplicationControllerList{} },
		Strategy:     s,
		Status:       statusOf(s),
		SelectableFields: func(o runtime.Object) fields.Set {
			return replicationControllerFields(o.(*corev1.ReplicationController))
		},
		Table: replicationControllerTable(c),
		Scale: scaleAccessor(
			func(rc *corev1.ReplicationController) (*int32, int32, *metav1.LabelSelector) {
				// A map selector is its MatchLabels: the Scale's selector
				// string is then upstream's SelectorFromSet(...).String().
				return rc.Spec.Replicas, rc.Status.Replicas, &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
			},
			func(rc *corev1.ReplicationController, n int32) { rc.Spec.Replicas = &n }),
		DefaultPropagation: metav1.DeletePropagationOrphan,
		StorageKeyPrefix:   storagePrefix(gv, "replicationcontrollers"),
	}
}

// defaultReplicationController is upstream's SetDefaults_ReplicationController
// plus the template's pod defaults: the selector and, when the controller
// has none, its labels come from the template's labels.
func defaultReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil {
		if t.Labels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = t.Labels
			}
			if len(rc.Labels) == 0 {
				rc.Labels = t.Labels
			}
		}
		defaultPodTemplate(t)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptrTo(int32(1))
	}
}

// validateReplicationController is upstream's ValidateReplicationControllerSpec.
// (Its rule that a writable GCE disk may not be shared by several
// replicas went with the SkipReadOnlyValidationGCE gate in v1.31.)
func validateReplicationController(rc *corev1.ReplicationController) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	spec := &rc.Spec
	errs = append(errs, validateNonnegative(spec.MinReadySeconds, p.Child("minReadySeconds"))...)
	sel := labels.Set(spec.Selector).AsSelector()
	if sel.Empty() {
		errs = append(errs, field.Required(p.Child("selector"), ""))
	}
	if spec.Replicas != nil {
		errs = append(errs, validateNonnegative(*spec.Replicas, p.Child("replicas"))...)
	}
	tp := p.Child("template")
	t := spec.Template
	if t == nil {
		return append(errs, field.Required(tp, ""))
	}
	if !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tp.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplate(t, "ReplicationController", tp)...)
	// validatePodTemplate lets an empty restart policy through (defaulting
	// fills it); upstream's RC rule asks for Always exactly.
	if t.Spec.RestartPolicy == "" {
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	return errs
}

// validateReplicationControllerStatus is upstream's
// ValidateReplicationControllerStatus.
func validateReplicationControllerStatus(st *corev1.ReplicationControllerStatus, p *field.Path) field.ErrorList {
	errs := validateReplicaCounts(p,
		count{"replicas", st.Replicas}, count{"fullyLabeledReplicas", st.FullyLabeledReplicas},
		count{"readyReplicas", st.ReadyReplicas}, count{"availableReplicas", st.AvailableReplicas})
	errs = append(errs, apivalidation.ValidateNonnegativeField(st.ObservedGeneration, p.Child("observedGeneration"))...)
	const gtReplicas = "cannot be greater than status.replicas"
	if st.FullyLabeledReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, gtReplicas))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), st.ReadyReplicas, gtReplicas))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, gtReplicas))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}

// replicationControllerFields is upstream's
// ReplicationControllerToSelectableFields.
func replicationControllerFields(rc *corev1.ReplicationController) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(rc.Status.Replicas))}
}

// replicationControllerTable is upstream's printReplicationController.
func replicationControllerTable(c clock) TableConvertor {
	return table[*corev1.ReplicationController]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
			col("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
			col("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			selectorColumn(corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]),
		},
		cells: func(rc *corev1.ReplicationController) []interface{} {
			var desired int32
			if rc.Spec.Replicas != nil {
				desired = *rc.Spec.Replicas
			}
			var names, images string
			if rc.Spec.Template != nil {
				names, images = templateContainers(rc.Spec.Template)
			}
			return []interface{}{
				rc.Name, int64(desired), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
				c.since(rc.CreationTimestamp), names, images, labels.FormatLabels(rc.Spec.Selector),
			}
		},
	}
}
