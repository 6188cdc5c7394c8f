package registry

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func statefulSetResource(c clock) *Resource {
	gv := v1(appsGroup)
	s := strategy[*appsv1.StatefulSet]{behavior[*appsv1.StatefulSet]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *appsv1.StatefulSet) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(ss *appsv1.StatefulSet) { ss.Status = appsv1.StatefulSetStatus{} },
		keepStatus:  func(obj, old *appsv1.StatefulSet) { obj.Status = old.Status },
		keepSpec: func(obj, old *appsv1.StatefulSet) {
			obj.Spec = old.Spec
			obj.Labels = old.Labels
		},
		defaults:       defaultStatefulSet,
		validate:       validateStatefulSet,
		validateUpdate: validateStatefulSetUpdate,
		validateStatus: func(obj, _ *appsv1.StatefulSet) field.ErrorList {
			st := obj.Status
			return validateReplicaCounts(field.NewPath("status"),
				count{"replicas", st.Replicas}, count{"readyReplicas", st.ReadyReplicas}, count{"currentReplicas", st.CurrentReplicas}, count{"updatedReplicas", st.UpdatedReplicas}, count{"availableReplicas", st.AvailableReplicas},
			)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "StatefulSet",
		Resource:         "statefulsets",
		SingularName:     "statefulset",
		Namespaced:       true,
		ShortNames:       []string{"sts"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status", "scale"},
		New:              func() runtime.Object { return &appsv1.StatefulSet{} },
		NewList:          func() runtime.Object { return &appsv1.StatefulSetList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*appsv1.StatefulSet]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Ready", "string", "Number of the pod with ready state"),
				ageColumn(),
				containersColumn(),
				imagesColumn(),
			},
			cells: func(ss *appsv1.StatefulSet) []interface{} {
				var desired int32
				if ss.Spec.Replicas != nil {
					desired = *ss.Spec.Replicas
				}
				names, images := templateContainers(&ss.Spec.Template)
				return []interface{}{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, desired), c.since(ss.CreationTimestamp), names, images}
			},
		},
		Scale: scaleAccessor(
			func(ss *appsv1.StatefulSet) (*int32, int32, *metav1.LabelSelector) {
				return ss.Spec.Replicas, ss.Status.Replicas, ss.Spec.Selector
			},
			func(ss *appsv1.StatefulSet, n int32) { ss.Spec.Replicas = &n }),
		StorageKeyPrefix: storagePrefix(gv, "statefulsets"),
	}
}

// defaultStatefulSet is apps/v1 SetDefaults_StatefulSet, plus the pod
// template's and claim templates' defaults.
func defaultStatefulSet(ss *appsv1.StatefulSet) {
	sp := &ss.Spec
	if sp.PodManagementPolicy == "" {
		sp.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if sp.UpdateStrategy.Type == "" {
		sp.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if sp.UpdateStrategy.RollingUpdate == nil {
			sp.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if sp.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && sp.UpdateStrategy.RollingUpdate != nil &&
		sp.UpdateStrategy.RollingUpdate.Partition == nil {
		sp.UpdateStrategy.RollingUpdate.Partition = ptrTo(int32(0))
	}
	if sp.PersistentVolumeClaimRetentionPolicy == nil {
		sp.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if sp.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		sp.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if sp.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		sp.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if sp.Replicas == nil {
		sp.Replicas = ptrTo(int32(1))
	}
	if sp.RevisionHistoryLimit == nil {
		sp.RevisionHistoryLimit = ptrTo(int32(10))
	}
	defaultPodTemplate(&sp.Template)
	for i := range sp.VolumeClaimTemplates {
		defaultPVCSpec(&sp.VolumeClaimTemplates[i].Spec)
	}
}

func validateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	errs = append(errs, validateOneOf(ss.Spec.PodManagementPolicy, sp.Child("podManagementPolicy"), appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)...)
	us := ss.Spec.UpdateStrategy
	up := sp.Child("updateStrategy")
	switch us.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		if us.RollingUpdate != nil {
			errs = append(errs, field.Invalid(up.Child("rollingUpdate"), us.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := us.RollingUpdate; ru != nil && ru.Partition != nil {
			errs = append(errs, validateNonnegative(*ru.Partition, up.Child("rollingUpdate", "partition"))...)
		}
	default:
		errs = append(errs, validateOneOf(us.Type, up.Child("type"), appsv1.OnDeleteStatefulSetStrategyType, appsv1.RollingUpdateStatefulSetStrategyType)...)
	}
	if ss.Spec.Replicas != nil {
		errs = append(errs, validateNonnegative(*ss.Spec.Replicas, sp.Child("replicas"))...)
	}
	errs = append(errs, validateNonnegative(ss.Spec.MinReadySeconds, sp.Child("minReadySeconds"))...)
	errs = append(errs, validateWorkloadSelector("statefulset", ss.Spec.Selector, ss.Spec.Template.Labels, sp)...)
	errs = append(errs, validatePodTemplate(&ss.Spec.Template, "StatefulSet", sp.Child("template"))...)
	return errs
}

// validateStatefulSetUpdate: only the fields upstream lists may change.
func validateStatefulSetUpdate(obj, old *appsv1.StatefulSet) field.ErrorList {
	clone := obj.Spec.DeepCopy()
	clone.Replicas = old.Spec.Replicas
	clone.Template = old.Spec.Template
	clone.UpdateStrategy = old.Spec.UpdateStrategy
	clone.MinReadySeconds = old.Spec.MinReadySeconds
	clone.Ordinals = old.Spec.Ordinals
	clone.RevisionHistoryLimit = old.Spec.RevisionHistoryLimit
	clone.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
	if semanticChanged(*clone, old.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}
