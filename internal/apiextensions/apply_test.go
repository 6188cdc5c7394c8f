package apiextensions

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

type schemaDefaulter struct{ s *Schema }

func (d schemaDefaulter) Default(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		d.s.Default(u.Object)
	}
}

// TestServerSideApply runs upstream's CRD field manager on the schema's type
// converter and the CRD's converter, as the API server does: two managers'
// entries of a list-type map merge by key, each owns its own, and taking
// over another's field is a conflict.
func TestServerSideApply(t *testing.T) {
	crd := widgetCRD(t)
	s := widgetSchema(t)
	conv, err := NewConverter(crd, ConverterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	fm, err := managedfields.NewDefaultCRDFieldManager(s.TypeConverter(), conv.ObjectConvertor(), schemaDefaulter{s}, unstructuredCreater{}, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(live runtime.Object, manager, js string, force bool) (runtime.Object, error) {
		return fm.Apply(live, &unstructured.Unstructured{Object: obj(t, js)}, manager, force)
	}
	live, _ := unstructuredCreater{}.New(gvk)
	live, err = apply(live, "alice", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},
		"spec":{"color":"red","ports":[{"name":"a","number":1}],"tags":["x"]}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	live, err = apply(live, "bob", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},
		"spec":{"ports":[{"name":"b","number":2}],"tags":["y"]}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	u := live.(*unstructured.Unstructured)
	ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
	if want := []interface{}{map[string]interface{}{"name": "a", "number": int64(1)}, map[string]interface{}{"name": "b", "number": int64(2)}}; !reflect.DeepEqual(ports, want) {
		t.Errorf("ports %v, want %v", ports, want)
	}
	tags, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "tags")
	if !reflect.DeepEqual(tags, []string{"x", "y"}) {
		t.Errorf("tags %v", tags)
	}
	var managers []string
	for _, e := range u.GetManagedFields() {
		managers = append(managers, e.Manager+"/"+string(e.Operation))
		if e.Manager == "bob" && !strings.Contains(string(e.FieldsV1.Raw), `"k:{\"name\":\"b\"}"`) {
			t.Errorf("bob's fields %s do not key ports by name", e.FieldsV1.Raw)
		}
	}
	if !reflect.DeepEqual(managers, []string{"alice/Apply", "bob/Apply"}) {
		t.Errorf("managers %v", managers)
	}

	_, err = apply(live, "bob", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"color":"blue"}}`, false)
	if err == nil || !strings.Contains(err.Error(), `conflict with "alice": .spec.color`) {
		t.Errorf("taking alice's field: %v", err)
	}
	if _, err := apply(live, "bob", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"color":"blue"}}`, true); err != nil {
		t.Errorf("forced apply: %v", err)
	}
}
