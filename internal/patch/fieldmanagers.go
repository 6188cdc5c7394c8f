package patch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// FieldManagersConfig is what NewFieldManagers needs.
type FieldManagersConfig struct {
	// TypeConverter of the served kinds: openapi.OpenAPI.TypeConverter().
	// Required.
	TypeConverter managedfields.TypeConverter
	// Scheme holding every served kind. Required.
	Scheme *runtime.Scheme
	// Defaulter applies defaults to the result of an apply, as decoding a
	// request body would. Nil means none.
	Defaulter runtime.ObjectDefaulter
	// ResetFields lists, per kind and subresource, the fields a writer of
	// that endpoint may not set and therefore does not own: for a resource
	// with a status subresource, "status" for the main resource and
	// everything but status (and metadata) for "status", as upstream's
	// strategies' GetResetFields. Nil entries reset nothing.
	ResetFields func(gvk schema.GroupVersionKind, subresource string) *fieldpath.Set
	// CustomResources makes the managers upstream's for custom resources
	// (unstructured objects, unknown fields kept where the schema says
	// so); Creater and Convertor are then required instead of Scheme,
	// which does not know the kinds.
	CustomResources bool
	Creater         runtime.ObjectCreater
	Convertor       runtime.ObjectConvertor
}

// FieldManagers holds one upstream managedfields.FieldManager per kind and
// subresource, created on first use. It is safe for concurrent use.
type FieldManagers struct {
	cfg FieldManagersConfig
	// convertor converts without copying when the version does not change
	// (always, since Myriad stores the served version), as kube-apiserver's
	// field managers do: the managers only read what they convert, and the
	// copy was a deep copy of every written object.
	convertor runtime.ObjectConvertor
	// created remembers creates' managed fields (Create).
	created createMemo

	mu struct {
		sync.Mutex
		// managers by kind and subresource; guarded by mu.
		managers map[managerKey]*managedfields.FieldManager
		// trims by kind and subresource (trim.go); a nil plan is kept too.
		trims map[managerKey]*trimPlan
	}
}

type managerKey struct {
	gvk         schema.GroupVersionKind
	subresource string
}

// NewFieldManagers validates cfg.
func NewFieldManagers(cfg FieldManagersConfig) (*FieldManagers, error) {
	if cfg.TypeConverter == nil {
		return nil, errors.New("patch: FieldManagersConfig.TypeConverter is required")
	}
	if cfg.Defaulter == nil {
		cfg.Defaulter = noDefaults{}
	}
	var f *FieldManagers
	switch {
	case cfg.CustomResources:
		if cfg.Creater == nil || cfg.Convertor == nil {
			return nil, errors.New("patch: FieldManagersConfig.Creater and Convertor are required for custom resources")
		}
		f = &FieldManagers{cfg: cfg, convertor: cfg.Convertor}
	case cfg.Scheme == nil:
		return nil, errors.New("patch: FieldManagersConfig.Scheme is required")
	default:
		cfg.Creater = cfg.Scheme
		f = &FieldManagers{cfg: cfg, convertor: runtime.UnsafeObjectConvertor(cfg.Scheme)}
	}
	f.mu.managers = map[managerKey]*managedfields.FieldManager{}
	f.mu.trims = map[managerKey]*trimPlan{}
	return f, nil
}

type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// Update records in newObj's managedFields that manager set the fields it
// changed from live, for a create (live is an empty object of the kind, such
// as registry.Resource.New(), with no UID), an update or a non-apply patch.
// subresource is "" for the object itself, or "status", "scale", ….
// newObj's own managedFields are honoured when the client sent them (that is
// how a client resets them); otherwise live's are carried over.
//
// On error, which only a bug or a corrupt stored managedFields causes,
// Update returns newObj with live's managedFields and the error: upstream
// logs it and goes on with the write, and so should the caller.
func (f *FieldManagers) Update(live, newObj runtime.Object, manager, subresource string) (runtime.Object, error) {
	fm, err := f.managerFor(newObj, subresource)
	if err == nil {
		var done bool
		if plan, apiVersion := f.trimFor(newObj, subresource); plan != nil && plan.applies(apiVersion, live, newObj) {
			done, err = updateTrimmed(fm, plan, apiVersion, live, newObj, manager, subresource)
		}
		switch {
		case done:
			return newObj, nil
		case err == nil:
			var out runtime.Object
			if out, err = fm.Update(live, newObj, manager); err == nil {
				return out, nil
			}
		}
	}
	if la, aerr := meta.Accessor(live); aerr == nil {
		if na, aerr := meta.Accessor(newObj); aerr == nil {
			na.SetManagedFields(la.GetManagedFields())
		}
	}
	return newObj, fmt.Errorf("patch: tracking managedFields of %s: %w", describe(newObj), err)
}

// updateTrimmed is Update's result from copies of live and newObj without
// the reset fields (trim.go) and without the entries the write cannot
// change (bystanders.go), set on newObj. It reports false without an
// error when the placeholder did not come back as it went in, which a bug
// alone would cause; Update then compares the whole objects.
func updateTrimmed(fm *managedfields.FieldManager, plan *trimPlan, apiVersion string, live, newObj runtime.Object, manager, subresource string) (bool, error) {
	la, lerr := meta.Accessor(live)
	na, nerr := meta.Accessor(newObj)
	if lerr != nil || nerr != nil {
		return false, errors.Join(lerr, nerr)
	}
	lc, nc := plan.copy(live), plan.copy(newObj)
	kept, aside := plan.setAside(la.GetManagedFields(), na.GetManagedFields(), apiVersion, manager, subresource)
	if aside != nil {
		lca, lerr := meta.Accessor(lc)
		nca, nerr := meta.Accessor(nc)
		if lerr != nil || nerr != nil {
			return false, errors.Join(lerr, nerr)
		}
		lca.SetManagedFields(kept)
		nca.SetManagedFields(slices.Clone(kept))
	}
	out, err := fm.Update(lc, nc, manager)
	if err != nil {
		return false, err
	}
	oa, err := meta.Accessor(out)
	if err != nil {
		return false, err
	}
	mf := oa.GetManagedFields()
	if aside != nil {
		var ok bool
		if mf, ok = aside.restore(mf, plan.placeholder); !ok {
			return false, nil
		}
	}
	na.SetManagedFields(mf)
	return true, nil
}

// ApplyOptions are the request's parameters of a server-side apply.
type ApplyOptions struct {
	// Force takes over fields other managers own instead of failing with a
	// conflict.
	Force bool
	// Subresource applied to: "" or "status".
	Subresource string
	// FieldValidation as in Options; only duplicate fields are subject to it:
	// an unknown field always fails an apply, since its schema is needed to
	// merge.
	FieldValidation string
}

// Apply merges a server-side apply configuration (the body of an
// application/apply-patch+yaml request, YAML or JSON) into live on behalf of
// manager, which is required (upstream: fieldManager is required for apply
// patch). For an apply that creates the object, live is an empty object of
// the kind (registry.Resource.New()).
//
// Returns the merged object with its managedFields, and field-validation
// warnings. Errors for the client are *apierrors.StatusError: 409 Conflict
// listing each conflicting field and its manager (upstream's wording and
// causes) unless opts.Force; 400 for undecodable YAML, a configuration of
// another kind or version, managedFields in the configuration, or fields the
// schema does not know; 422 for a missing manager.
func (f *FieldManagers) Apply(live runtime.Object, config []byte, manager string, opts ApplyOptions) (runtime.Object, []string, error) {
	if manager == "" {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Required(field.NewPath("fieldManager"), "is required for apply patch"),
		})
	}
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(config, &applied.Object); err != nil {
		return nil, nil, badRequest("error decoding YAML: %v", err)
	}
	if applied.Object == nil {
		return nil, nil, badRequest("error decoding YAML: the apply configuration must be an object")
	}
	if f.cfg.CustomResources {
		// Unstructured objects keep what decoding gives them, and custom
		// resources are never converted to Go types: integers must be
		// int64 as apimachinery's JSON decoding makes them (the schema's
		// integer checks refuse float64), not YAML's float64.
		j, err := yaml.YAMLToJSON(config)
		if err != nil {
			return nil, nil, badRequest("error decoding YAML: %v", err)
		}
		obj := map[string]interface{}{}
		if err := utiljson.Unmarshal(j, &obj); err != nil {
			return nil, nil, badRequest("error decoding YAML: %v", err)
		}
		applied.Object = obj
	}
	var warnings []string
	if opts.FieldValidation != metav1.FieldValidationIgnore {
		if err := yaml.UnmarshalStrict(config, &map[string]interface{}{}); err != nil {
			if opts.FieldValidation == metav1.FieldValidationStrict {
				return nil, nil, badRequest("error strict decoding YAML: %v", err)
			}
			warnings = append(warnings, err.Error())
		}
	}
	fm, err := f.managerFor(live, opts.Subresource)
	if err != nil {
		return nil, nil, err
	}
	out, err := fm.Apply(live, applied, manager, opts.Force)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, nil, err
		}
		// The managedfields package returns plain errors; the ones naming
		// the patch object are the configuration's fault (a field the schema
		// does not declare, a value of the wrong type).
		if strings.Contains(err.Error(), "patch object") {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("applying to %s: %w", describe(live), err))
	}
	return out, warnings, nil
}

// managerFor returns the field manager of obj's kind and subresource,
// creating it on first use.
func (f *FieldManagers) managerFor(obj runtime.Object, subresource string) (*managedfields.FieldManager, error) {
	gvk, err := f.kindOf(obj)
	if err != nil {
		return nil, err
	}
	key := managerKey{gvk: gvk, subresource: subresource}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fm, ok := f.mu.managers[key]; ok {
		return fm, nil
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if f.cfg.ResetFields != nil {
		if set := f.cfg.ResetFields(gvk, subresource); set != nil {
			reset = fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{
				fieldpath.APIVersion(gvk.GroupVersion().String()): set,
			})
		}
	}
	newManager := managedfields.NewDefaultFieldManager
	if f.cfg.CustomResources {
		newManager = managedfields.NewDefaultCRDFieldManager
	}
	fm, err := newManager(f.cfg.TypeConverter, f.convertor, f.cfg.Defaulter, f.cfg.Creater,
		gvk, gvk.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, fmt.Errorf("patch: field manager for %v %q: %w", gvk, subresource, err)
	}
	f.mu.managers[key] = fm
	return fm, nil
}

// trimFor returns the trim plan of obj's kind for writes through
// subresource (nil when there is nothing to leave out), and the kind's
// apiVersion.
func (f *FieldManagers) trimFor(obj runtime.Object, subresource string) (*trimPlan, string) {
	if f.cfg.CustomResources || f.cfg.ResetFields == nil {
		return nil, ""
	}
	gvk, err := f.kindOf(obj)
	if err != nil {
		return nil, ""
	}
	key := managerKey{gvk: gvk, subresource: subresource}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.mu.trims[key]
	if !ok {
		p = newTrimPlan(obj, f.cfg.ResetFields(gvk, subresource))
		f.mu.trims[key] = p
	}
	return p, gvk.GroupVersion().String()
}

// kindOf is obj's TypeMeta kind or, for typed objects without one (as read
// from storage), the scheme's.
func (f *FieldManagers) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if obj == nil {
		return schema.GroupVersionKind{}, errors.New("patch: nil object")
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() && gvk.Kind != "" {
		return gvk, nil
	}
	if f.cfg.Scheme == nil {
		return schema.GroupVersionKind{}, fmt.Errorf("patch: %T has no kind", obj)
	}
	gvks, _, err := f.cfg.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("patch: kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}

func describe(obj runtime.Object) string {
	a, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, a.GetNamespace(), a.GetName())
}
