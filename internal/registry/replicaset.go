package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func replicaSetResource(c clock) *Resource {
	gv := v1(appsGroup)
	s := strategy[*appsv1.ReplicaSet]{behavior[*appsv1.ReplicaSet]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *appsv1.ReplicaSet) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(rs *appsv1.ReplicaSet) { rs.Status = appsv1.ReplicaSetStatus{} },
		keepStatus:  func(obj, old *appsv1.ReplicaSet) { obj.Status = old.Status },
		keepSpec: func(obj, old *appsv1.ReplicaSet) {
			obj.Spec = old.Spec
			obj.Labels = old.Labels
		},
		defaults: func(rs *appsv1.ReplicaSet) {
			if rs.Spec.Replicas == nil {
				rs.Spec.Replicas = ptrTo(int32(1))
			}
			defaultPodTemplate(&rs.Spec.Template)
		},
		validate: validateReplicaSet,
		validateUpdate: func(obj, old *appsv1.ReplicaSet) field.ErrorList {
			return immutable(obj.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))
		},
		validateStatus: func(obj, _ *appsv1.ReplicaSet) field.ErrorList {
			st := obj.Status
			return validateReplicaCounts(field.NewPath("status"),
				count{"replicas", st.Replicas}, count{"fullyLabeledReplicas", st.FullyLabeledReplicas}, count{"readyReplicas", st.ReadyReplicas}, count{"availableReplicas", st.AvailableReplicas},
			)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ReplicaSet",
		Resource:         "replicasets",
		SingularName:     "replicaset",
		Namespaced:       true,
		ShortNames:       []string{"rs"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status", "scale"},
		New:              func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:          func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(o runtime.Object) fields.Set { return replicaSetFields(o.(*appsv1.ReplicaSet)) },
		Table:            replicaSetTable(c),
		Scale: scaleAccessor(
			func(rs *appsv1.ReplicaSet) (*int32, int32, *metav1.LabelSelector) {
				return rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector
			},
			func(rs *appsv1.ReplicaSet, n int32) { rs.Spec.Replicas = &n }),
		StorageKeyPrefix: storagePrefix(gv, "replicasets"),
	}
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if rs.Spec.Replicas != nil {
		errs = append(errs, validateNonnegative(*rs.Spec.Replicas, sp.Child("replicas"))...)
	}
	errs = append(errs, validateNonnegative(rs.Spec.MinReadySeconds, sp.Child("minReadySeconds"))...)
	// Upstream's replica set validation names "deployment" in this message.
	errs = append(errs, validateWorkloadSelector("deployment", rs.Spec.Selector, rs.Spec.Template.Labels, sp)...)
	errs = append(errs, validatePodTemplate(&rs.Spec.Template, "ReplicaSet", sp.Child("template"))...)
	return errs
}

// replicaSetFields: status.replicas lets the deployment controller find
// replica sets that still have pods.
func replicaSetFields(rs *appsv1.ReplicaSet) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(rs.Status.Replicas))}
}

// replicaSetTable is upstream's printReplicaSet.
func replicaSetTable(c clock) TableConvertor {
	return table[*appsv1.ReplicaSet]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
			col("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
			col("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			selectorColumn(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
		},
		cells: func(rs *appsv1.ReplicaSet) []interface{} {
			var desired int32
			if rs.Spec.Replicas != nil {
				desired = *rs.Spec.Replicas
			}
			names, images := templateContainers(&rs.Spec.Template)
			return []interface{}{
				rs.Name, int64(desired), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
				c.since(rs.CreationTimestamp), names, images, selectorString(rs.Spec.Selector),
			}
		},
	}
}
