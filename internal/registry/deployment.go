package registry

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func deploymentResource(c clock) *Resource {
	gv := v1(appsGroup)
	s := strategy[*appsv1.Deployment]{behavior[*appsv1.Deployment]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		// Annotations bump generation too: the controller copies them to
		// replica sets, so a change must be observed like a spec change.
		specChanged: func(obj, old *appsv1.Deployment) bool {
			return semanticChanged(obj.Spec, old.Spec) || semanticChanged(obj.Annotations, old.Annotations)
		},
		resetStatus: func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{} },
		keepStatus:  func(obj, old *appsv1.Deployment) { obj.Status = old.Status },
		keepSpec: func(obj, old *appsv1.Deployment) {
			obj.Spec = old.Spec
			obj.Labels = old.Labels
		},
		defaults: defaultDeployment,
		validate: validateDeployment,
		validateUpdate: func(obj, old *appsv1.Deployment) field.ErrorList {
			return immutable(obj.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))
		},
		validateStatus: func(obj, _ *appsv1.Deployment) field.ErrorList {
			st := obj.Status
			return validateReplicaCounts(field.NewPath("status"),
				count{"replicas", st.Replicas}, count{"updatedReplicas", st.UpdatedReplicas}, count{"readyReplicas", st.ReadyReplicas}, count{"availableReplicas", st.AvailableReplicas}, count{"unavailableReplicas", st.UnavailableReplicas},
			)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Deployment",
		Resource:         "deployments",
		SingularName:     "deployment",
		Namespaced:       true,
		ShortNames:       []string{"deploy"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status", "scale"},
		New:              func() runtime.Object { return &appsv1.Deployment{} },
		NewList:          func() runtime.Object { return &appsv1.DeploymentList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            deploymentTable(c),
		Scale: scaleAccessor(
			func(d *appsv1.Deployment) (*int32, int32, *metav1.LabelSelector) {
				return d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector
			},
			func(d *appsv1.Deployment, n int32) { d.Spec.Replicas = &n }),
		StorageKeyPrefix: storagePrefix(gv, "deployments"),
	}
}

// defaultDeployment is apps/v1 SetDefaults_Deployment plus the template's
// pod defaults.
func defaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrTo(int32(1))
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromString("25%"))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptrTo(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptrTo(int32(600))
	}
	defaultPodTemplate(&d.Spec.Template)
}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if d.Spec.Replicas != nil {
		errs = append(errs, validateNonnegative(*d.Spec.Replicas, sp.Child("replicas"))...)
	}
	errs = append(errs, validateWorkloadSelector("deployment", d.Spec.Selector, d.Spec.Template.Labels, sp)...)
	errs = append(errs, validatePodTemplate(&d.Spec.Template, "Deployment", sp.Child("template"))...)
	errs = append(errs, validateDeploymentStrategy(&d.Spec.Strategy, sp.Child("strategy"))...)
	if d.Spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(*d.Spec.RevisionHistoryLimit, sp.Child("revisionHistoryLimit"))...)
	}
	errs = append(errs, validateNonnegative(d.Spec.MinReadySeconds, sp.Child("minReadySeconds"))...)
	if pd := d.Spec.ProgressDeadlineSeconds; pd != nil {
		errs = append(errs, validateNonnegative(*pd, sp.Child("progressDeadlineSeconds"))...)
		if *pd <= d.Spec.MinReadySeconds {
			errs = append(errs, field.Invalid(sp.Child("progressDeadlineSeconds"), *pd, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(st *appsv1.DeploymentStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch st.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(p.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if st.RollingUpdate == nil {
			break
		}
		rp := p.Child("rollingUpdate")
		ru := st.RollingUpdate
		errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, rp.Child("maxUnavailable"))...)
		errs = append(errs, validatePositiveIntOrPercent(ru.MaxSurge, rp.Child("maxSurge"))...)
		if isZeroIntOrPercent(ru.MaxUnavailable) && isZeroIntOrPercent(ru.MaxSurge) {
			errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
	default:
		errs = append(errs, validateOneOf(st.Type, p.Child("type"), appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType)...)
	}
	return errs
}

// deploymentTable is upstream's printDeployment.
func deploymentTable(c clock) TableConvertor {
	return table[*appsv1.Deployment]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Ready", "string", "Number of the pod with ready state"),
			col("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
			col("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			selectorColumn(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
		},
		cells: func(d *appsv1.Deployment) []interface{} {
			var desired int32
			if d.Spec.Replicas != nil {
				desired = *d.Spec.Replicas
			}
			names, images := templateContainers(&d.Spec.Template)
			return []interface{}{
				d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired), int64(d.Status.UpdatedReplicas),
				int64(d.Status.AvailableReplicas), c.since(d.CreationTimestamp), names, images, selectorString(d.Spec.Selector),
			}
		},
	}
}
