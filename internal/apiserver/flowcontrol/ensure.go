package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/myriad-k8s/myriad/internal/registry"
)

// Objects writes API objects through the server's own create, update and
// delete paths (apiserver.Objects).
type Objects interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error)
	Create(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	Update(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, obj runtime.Object) error
}

var (
	flowSchemasGVR    = flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas")
	priorityLevelsGVR = flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations")
	configMapsGVR     = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// configObject is a FlowSchema or a PriorityLevelConfiguration.
type configObject interface {
	*flowcontrolv1.FlowSchema | *flowcontrolv1.PriorityLevelConfiguration
	runtime.Object
	GetName() string
	GetGeneration() int64
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}

// kindOps is what ensuring needs to know of one kind.
type kindOps[T configObject] struct {
	gvr schema.GroupVersionResource
	// specEqualish: would defaulting make bootstrap's spec current's
	// (for the exempt level, ignoring what operators may tune)?
	specEqualish func(bootstrap, current T) bool
	// replaceSpec returns a copy of into with from's spec.
	replaceSpec func(into, from T) T
	list        func() []T
}

func flowSchemaOps(list func() []*flowcontrolv1.FlowSchema) kindOps[*flowcontrolv1.FlowSchema] {
	return kindOps[*flowcontrolv1.FlowSchema]{
		gvr: flowSchemasGVR,
		specEqualish: func(b, cur *flowcontrolv1.FlowSchema) bool {
			e := b.DeepCopy()
			registry.DefaultFlowSchema(e)
			return apiequality.Semantic.DeepEqual(e.Spec, cur.Spec)
		},
		replaceSpec: func(into, from *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
			c := into.DeepCopy()
			c.Spec = *from.Spec.DeepCopy()
			return c
		},
		list: list,
	}
}

func priorityLevelOps(list func() []*flowcontrolv1.PriorityLevelConfiguration) kindOps[*flowcontrolv1.PriorityLevelConfiguration] {
	return kindOps[*flowcontrolv1.PriorityLevelConfiguration]{
		gvr: priorityLevelsGVR,
		specEqualish: func(b, cur *flowcontrolv1.PriorityLevelConfiguration) bool {
			e := b.DeepCopy()
			registry.DefaultPriorityLevelConfiguration(e)
			if e.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
				if cur.Spec.Exempt == nil {
					return false
				}
				e.Spec.Exempt.NominalConcurrencyShares = cur.Spec.Exempt.NominalConcurrencyShares
				e.Spec.Exempt.LendablePercent = cur.Spec.Exempt.LendablePercent
			}
			return apiequality.Semantic.DeepEqual(e.Spec, cur.Spec)
		},
		replaceSpec: func(into, from *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
			c := into.DeepCopy()
			c.Spec = *from.Spec.DeepCopy()
			return c
		},
		list: list,
	}
}

// ensureAll brings the API's configuration to upstream's: mandatory
// objects forced back, suggested ones created when missing and updated
// while they allow it, and objects a former default set left behind
// (annotated for auto-update, no longer in the set) deleted — upstream's
// pkg/registry/flowcontrol/ensurer. Conflicts are not errors: the next
// pass, on the resulting watch event, sees the new state.
func ensureAll(ctx context.Context, o Objects, fs kindOps[*flowcontrolv1.FlowSchema], pl kindOps[*flowcontrolv1.PriorityLevelConfiguration]) error {
	var errs []error
	// Priority levels first, so the FlowSchemas never dangle.
	errs = append(errs, ensureKind(ctx, o, pl, bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations)...)
	errs = append(errs, ensureKind(ctx, o, fs, bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas)...)
	return errors.Join(errs...)
}

func ensureKind[T configObject](ctx context.Context, o Objects, ops kindOps[T], mandatory, suggested []T) []error {
	var errs []error
	wanted := make(map[string]bool, len(mandatory)+len(suggested))
	for _, b := range suggested {
		wanted[b.GetName()] = true
		if err := ensureOne(ctx, o, ops, b, false); err != nil {
			errs = append(errs, err)
		}
	}
	for _, b := range mandatory {
		wanted[b.GetName()] = true
		if err := ensureOne(ctx, o, ops, b, true); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cur := range ops.list() {
		if wanted[cur.GetName()] {
			continue
		}
		if auto, err := strconv.ParseBool(cur.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !auto {
			continue // an operator's own object
		}
		if err := o.Delete(ctx, ops.gvr, "", cur.GetName(), cur); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting unwanted %s %s: %w", ops.gvr.Resource, cur.GetName(), err))
		}
	}
	return errs
}

func ensureOne[T configObject](ctx context.Context, o Objects, ops kindOps[T], b T, mandatory bool) error {
	name := b.GetName()
	got, err := o.Get(ctx, ops.gvr, "", name)
	if apierrors.IsNotFound(err) {
		_, err = o.Create(ctx, ops.gvr, b.DeepCopyObject())
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensuring %s %s: %w", ops.gvr.Resource, name, err)
	}
	cur, ok := got.(T)
	if !ok {
		return fmt.Errorf("ensuring %s %s: got %T", ops.gvr.Resource, name, got)
	}
	revised, update := revise(ops, cur, b, mandatory)
	if !update {
		return nil
	}
	if _, err := o.Update(ctx, ops.gvr, revised); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating %s %s: %w", ops.gvr.Resource, name, err)
	}
	return nil
}

// revise is upstream's ReviseIfNeeded: whether (and to what) current
// must change. A suggested object's spec is kept up to date while its
// annotation says so, or, without a readable annotation, while no one has
// changed it (generation 1); the annotation is then written to say which.
func revise[T configObject](ops kindOps[T], cur, b T, mandatory bool) (T, bool) {
	autoUpdate := mandatory
	if !autoUpdate {
		if v, err := strconv.ParseBool(cur.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
			autoUpdate = v
		} else {
			autoUpdate = cur.GetGeneration() == 1
		}
	}
	v, err := strconv.ParseBool(cur.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
	annotate := err != nil || v != autoUpdate
	specChanged := autoUpdate && !ops.specEqualish(b, cur)
	if !annotate && !specChanged {
		var zero T
		return zero, false
	}
	revised := cur.DeepCopyObject().(T)
	if specChanged {
		revised = ops.replaceSpec(cur, b)
	}
	if annotate {
		a := make(map[string]string, len(revised.GetAnnotations())+1)
		for k, v := range revised.GetAnnotations() {
			a[k] = v
		}
		a[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
		revised.SetAnnotations(a)
	}
	return revised, true
}
