package registry

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// viaStorage is the Strategy and StatusStrategy of a served version that
// keeps its storage version's rules, as upstream applies one set of rules
// (the internal version's) to every version: it converts the object, runs
// the storage version's strategy, and converts the result back. Field
// paths in its errors are the storage version's, as upstream's are the
// internal version's.
type viaStorage struct {
	newStorage  func() runtime.Object
	toStorage   func(in, out runtime.Object) error
	fromStorage func(in, out runtime.Object) error
	strategy    Strategy
	status      StatusStrategy
}

var (
	_ Strategy       = viaStorage{}
	_ StatusStrategy = viaStorage{}
)

func (v viaStorage) convert(o runtime.Object) (runtime.Object, *field.Error) {
	out := v.newStorage()
	if err := v.toStorage(o, out); err != nil {
		// Only what the conversion reads from annotations can fail.
		return nil, field.Invalid(field.NewPath("metadata", "annotations"), "", err.Error())
	}
	return out, nil
}

// convertBoth converts obj and old, or reports why either does not.
func (v viaStorage) convertBoth(o, oldObj runtime.Object) (runtime.Object, runtime.Object, field.ErrorList) {
	s, err := v.convert(o)
	if err != nil {
		return nil, nil, field.ErrorList{err}
	}
	so, err := v.convert(oldObj)
	if err != nil {
		return nil, nil, field.ErrorList{err}
	}
	return s, so, nil
}

// back writes the storage object s over the served object o. A
// conversion from storage cannot fail for data the strategy produced.
func (v viaStorage) back(s, o runtime.Object) {
	_ = v.fromStorage(s, o)
}

func (v viaStorage) PrepareForCreate(ctx context.Context, o runtime.Object) {
	s, err := v.convert(o)
	if err != nil {
		return // Validate reports it
	}
	v.strategy.PrepareForCreate(ctx, s)
	v.back(s, o)
}

func (v viaStorage) PrepareForUpdate(ctx context.Context, o, oldObj runtime.Object) {
	s, so, errs := v.convertBoth(o, oldObj)
	if errs != nil {
		return
	}
	v.strategy.PrepareForUpdate(ctx, s, so)
	v.back(s, o)
}

func (v viaStorage) Validate(ctx context.Context, o runtime.Object) field.ErrorList {
	s, err := v.convert(o)
	if err != nil {
		return field.ErrorList{err}
	}
	return v.strategy.Validate(ctx, s)
}

func (v viaStorage) ValidateUpdate(ctx context.Context, o, oldObj runtime.Object) field.ErrorList {
	s, so, errs := v.convertBoth(o, oldObj)
	if errs != nil {
		return errs
	}
	return v.strategy.ValidateUpdate(ctx, s, so)
}

func (v viaStorage) PrepareForStatusUpdate(ctx context.Context, o, oldObj runtime.Object) {
	s, so, errs := v.convertBoth(o, oldObj)
	if errs != nil {
		return
	}
	v.status.PrepareForStatusUpdate(ctx, s, so)
	v.back(s, o)
}

func (v viaStorage) ValidateStatusUpdate(ctx context.Context, o, oldObj runtime.Object) field.ErrorList {
	s, so, errs := v.convertBoth(o, oldObj)
	if errs != nil {
		return errs
	}
	return v.status.ValidateStatusUpdate(ctx, s, so)
}

// viaStorageTable prints a served version with its storage version's
// printer.
type viaStorageTable struct {
	v     viaStorage
	table TableConvertor
}

func (t viaStorageTable) Columns() []metav1.TableColumnDefinition { return t.table.Columns() }

func (t viaStorageTable) Cells(obj runtime.Object) []interface{} {
	s, err := t.v.convert(obj)
	if err != nil {
		// A stored object always converts; a cell per column keeps the
		// row well-formed if one somehow does not.
		cells := make([]interface{}, len(t.table.Columns()))
		m, _ := apimeta.Accessor(obj)
		if m != nil {
			cells[0] = m.GetName()
		}
		for i := 1; i < len(cells); i++ {
			cells[i] = "<unknown>"
		}
		return cells
	}
	return t.table.Cells(s)
}
