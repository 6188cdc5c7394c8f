package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func daemonSetResource(c clock) *Resource {
	gv := v1(appsGroup)
	s := strategy[*appsv1.DaemonSet]{behavior[*appsv1.DaemonSet]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *appsv1.DaemonSet) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(ds *appsv1.DaemonSet) { ds.Status = appsv1.DaemonSetStatus{} },
		keepStatus:  func(obj, old *appsv1.DaemonSet) { obj.Status = old.Status },
		keepSpec: func(obj, old *appsv1.DaemonSet) {
			obj.Spec = old.Spec
			obj.Labels = old.Labels
		},
		defaults: defaultDaemonSet,
		validate: validateDaemonSet,
		validateUpdate: func(obj, old *appsv1.DaemonSet) field.ErrorList {
			return immutable(obj.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))
		},
		validateStatus: func(obj, _ *appsv1.DaemonSet) field.ErrorList {
			st := obj.Status
			return validateReplicaCounts(field.NewPath("status"),
				count{"currentNumberScheduled", st.CurrentNumberScheduled}, count{"numberMisscheduled", st.NumberMisscheduled}, count{"desiredNumberScheduled", st.DesiredNumberScheduled}, count{"numberReady", st.NumberReady}, count{"updatedNumberScheduled", st.UpdatedNumberScheduled}, count{"numberAvailable", st.NumberAvailable}, count{"numberUnavailable", st.NumberUnavailable},
			)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "DaemonSet",
		Resource:         "daemonsets",
		SingularName:     "daemonset",
		Namespaced:       true,
		ShortNames:       []string{"ds"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &appsv1.DaemonSet{} },
		NewList:          func() runtime.Object { return &appsv1.DaemonSetList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            daemonSetTable(c),
		StorageKeyPrefix: storagePrefix(gv, "daemonsets"),
	}
}

// defaultDaemonSet is apps/v1 SetDefaults_DaemonSet plus template defaults.
func defaultDaemonSet(ds *appsv1.DaemonSet) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
		if us.RollingUpdate.MaxSurge == nil {
			us.RollingUpdate.MaxSurge = ptrTo(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	defaultPodTemplate(&ds.Spec.Template)
}

func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	errs = append(errs, validateWorkloadSelector("daemonset", ds.Spec.Selector, ds.Spec.Template.Labels, sp)...)
	errs = append(errs, validatePodTemplate(&ds.Spec.Template, "DaemonSet", sp.Child("template"))...)
	errs = append(errs, validateNonnegative(ds.Spec.MinReadySeconds, sp.Child("minReadySeconds"))...)
	if ds.Spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(*ds.Spec.RevisionHistoryLimit, sp.Child("revisionHistoryLimit"))...)
	}
	us := ds.Spec.UpdateStrategy
	up := sp.Child("updateStrategy")
	switch us.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if ru := us.RollingUpdate; ru != nil {
			rp := up.Child("rollingUpdate")
			errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
			errs = append(errs, validatePositiveIntOrPercent(ru.MaxSurge, rp.Child("maxSurge"))...)
			if isZeroIntOrPercent(ru.MaxUnavailable) && isZeroIntOrPercent(ru.MaxSurge) {
				errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
			}
		}
	default:
		errs = append(errs, validateOneOf(us.Type, up.Child("type"), appsv1.OnDeleteDaemonSetStrategyType, appsv1.RollingUpdateDaemonSetStrategyType)...)
	}
	return errs
}

// daemonSetTable is upstream's printDaemonSet.
func daemonSetTable(c clock) TableConvertor {
	st := appsv1.DaemonSetStatus{}.SwaggerDoc()
	return table[*appsv1.DaemonSet]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Desired", "integer", st["desiredNumberScheduled"]),
			col("Current", "integer", st["currentNumberScheduled"]),
			col("Ready", "integer", st["numberReady"]),
			col("Up-to-date", "integer", st["updatedNumberScheduled"]),
			col("Available", "integer", st["numberAvailable"]),
			col("Node Selector", "string", "The node selector of the pod template"),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			selectorColumn(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]),
		},
		cells: func(ds *appsv1.DaemonSet) []interface{} {
			s := ds.Status
			names, images := templateContainers(&ds.Spec.Template)
			return []interface{}{
				ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
				int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
				c.since(ds.CreationTimestamp), names, images, selectorString(ds.Spec.Selector),
			}
		},
	}
}
