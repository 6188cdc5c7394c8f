package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func leaseResource(c clock) *Resource {
	gv := v1(coordinationGroup)
	s := strategy[*coordinationv1.Lease]{behavior[*coordinationv1.Lease]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		validate:   validateLease,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Lease",
		Resource:         "leases",
		SingularName:     "lease",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:          func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*coordinationv1.Lease]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
				ageColumn(),
			},
			cells: func(l *coordinationv1.Lease) []interface{} {
				holder := ""
				if l.Spec.HolderIdentity != nil {
					holder = *l.Spec.HolderIdentity
				}
				return []interface{}{l.Name, holder, c.since(l.CreationTimestamp)}
			},
		},
		Heartbeat:        leaseHeartbeat,
		StorageKeyPrefix: storagePrefix(gv, "leases"),
	}
}

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(sp.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(sp.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	if st := l.Spec.Strategy; st != nil && *st != coordinationv1.OldestEmulationVersion {
		errs = append(errs, field.NotSupported(sp.Child("strategy"), *st, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
	}
	if ph := l.Spec.PreferredHolder; ph != nil && *ph != "" && (l.Spec.Strategy == nil || *l.Spec.Strategy == "") {
		errs = append(errs, field.Forbidden(sp.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
