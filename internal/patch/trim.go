package patch

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// A write's reset fields (Config.ResetFields) are never owned by its
// writer, and changes under them are never charged to anyone: upstream's
// updater drops them from the comparison and from the writer's set. So
// when the reset set holds a whole top-level field — a status write's
// spec and metadata, a main-resource write's status — the field managers
// may compare copies of live and newObj without it and reach the same
// managedFields, without walking it twice by reflection. For a pod's
// Running status that is most of the object.
//
// A trimPlan is that for one kind and endpoint; nil means nothing to
// leave out (no reset fields, custom resources, a kind that is not a Go
// struct).
type trimPlan struct {
	// zero are the indexes of the struct fields left out (spec, status).
	zero []int
	// meta is the index of the embedded ObjectMeta when metadata is reset
	// whole, else -1; the copy keeps only what the managers read of it.
	meta int
	// tops are the reset top-level fields as fieldsV1 keys ("f:spec"),
	// and placeholder a set of the first left-out one alone (bystanders.go).
	tops        []string
	placeholder []byte
}

// newTrimPlan plans trimming obj's kind for a write whose reset fields
// are reset.
func newTrimPlan(obj runtime.Object, reset *fieldpath.Set) *trimPlan {
	if reset == nil {
		return nil
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	p := &trimPlan{meta: -1}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || !sf.IsExported() || !reset.Has(fieldpath.MakePathOrDie(name)) {
			continue
		}
		if name == "metadata" {
			if sf.Type != reflect.TypeFor[metav1.ObjectMeta]() {
				return nil
			}
			p.meta = i
			p.tops = append(p.tops, "f:metadata")
			continue
		}
		p.zero = append(p.zero, i)
		p.tops = append(p.tops, "f:"+name)
		if p.placeholder == nil {
			p.placeholder = []byte(`{"f:` + name + `":{}}`)
		}
	}
	if len(p.zero) == 0 && p.meta < 0 {
		return nil
	}
	if p.placeholder == nil {
		p.tops = nil // metadata alone: no field to stand in with
	}
	return p
}

// applies reports whether the plan gives upstream's result for these
// objects: every managedFields entry is in apiVersion, since an entry in
// another version is compared after a conversion whose reset fields are
// that version's.
func (p *trimPlan) applies(apiVersion string, objs ...runtime.Object) bool {
	for _, o := range objs {
		a, err := meta.Accessor(o)
		if err != nil {
			return false
		}
		for _, e := range a.GetManagedFields() {
			if e.APIVersion != apiVersion {
				return false
			}
		}
	}
	return true
}

// copy is a shallow copy of obj without the planned fields. The field
// managers only read what they compare, and set managedFields on the copy
// of the new object, not on obj.
func (p *trimPlan) copy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	for _, i := range p.zero {
		f := c.Elem().Field(i)
		f.Set(reflect.Zero(f.Type()))
	}
	if p.meta >= 0 {
		m := v.Field(p.meta).Addr().Interface().(*metav1.ObjectMeta)
		// Name and namespace for error messages, the UID that tells a
		// create from an update, and the managedFields themselves.
		c.Elem().Field(p.meta).Set(reflect.ValueOf(metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ManagedFields: m.ManagedFields,
		}))
	}
	return c.Interface().(runtime.Object)
}
