package apiextensions

import (
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

func TestTable(t *testing.T) {
	crd := widgetCRD(t)
	created := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	w := &unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/v1","kind":"Widget",
		"metadata":{"name":"w1","namespace":"default","creationTimestamp":"`+created+`"},
		"spec":{"color":"red","replicas":3},"status":{"ready":true}}`)}

	tests := []struct {
		version   string
		columns   []string
		priority1 []string
		obj       *unstructured.Unstructured
		cells     []interface{}
	}{
		{version: "v1", columns: []string{"Name", "Color", "Replicas", "Ready"}, priority1: []string{"Ready"},
			obj: w, cells: []interface{}{"w1", "red", int64(3), true}},
		{version: "v1", columns: []string{"Name", "Color", "Replicas", "Ready"}, priority1: []string{"Ready"},
			obj:   &unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bare"}}`)},
			cells: []interface{}{"bare", nil, nil, nil}},
		// Without additionalPrinterColumns upstream serves AGE.
		{version: "v2", columns: []string{"Name", "Age"}, obj: w, cells: []interface{}{"w1", "10m"}},
	}
	for _, tc := range tests {
		t.Run(tc.version+"/"+tc.obj.GetName(), func(t *testing.T) {
			table, err := NewTable(crd, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			var names, priority1 []string
			for _, c := range table.Columns() {
				names = append(names, c.Name)
				if c.Priority == 1 {
					priority1 = append(priority1, c.Name)
				}
			}
			if !reflect.DeepEqual(names, tc.columns) || !reflect.DeepEqual(priority1, tc.priority1) {
				t.Errorf("columns %v (priority 1: %v), want %v (%v)", names, priority1, tc.columns, tc.priority1)
			}
			if got := table.Cells(tc.obj); !reflect.DeepEqual(got, tc.cells) {
				t.Errorf("cells %#v, want %#v", got, tc.cells)
			}
		})
	}
	if _, err := NewTable(crd, "v9"); err == nil {
		t.Error("NewTable accepted a version the CRD does not have")
	}
}

// TestTableConcurrent: one Table serves concurrent requests (run with
// -race).
func TestTableConcurrent(t *testing.T) {
	crd := widgetCRD(t)
	table, err := NewTable(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := SelectableFields(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &unstructured.Unstructured{Object: obj(t, validWidget)}
			for j := 0; j < 200; j++ {
				if cells := table.Cells(w); cells[1] != "red" {
					t.Errorf("cells %v", cells)
					return
				}
				if f := sel(w); f["spec.color"] != "red" {
					t.Errorf("fields %v", f)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestSelectableFields(t *testing.T) {
	crd := widgetCRD(t)
	fn, err := SelectableFields(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		obj  string
		want fields.Set
	}{
		{name: "set", obj: validWidget, want: fields.Set{"spec.color": "red", "spec.replicas": "3"}},
		{name: "missing", obj: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{}}`,
			want: fields.Set{"spec.color": "", "spec.replicas": ""}},
		{name: "no spec", obj: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`,
			want: fields.Set{"spec.color": "", "spec.replicas": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fn(&unstructured.Unstructured{Object: obj(t, tc.obj)}); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SelectableFields = %v, want %v", got, tc.want)
			}
		})
	}
	// A typed object has no custom fields.
	if got := fn(&metav1.PartialObjectMetadata{}); !reflect.DeepEqual(got, fields.Set{"spec.color": "", "spec.replicas": ""}) {
		t.Errorf("SelectableFields of a typed object = %v", got)
	}
	// A version without selectable fields has none.
	fn2, err := SelectableFields(crd, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if got := fn2(&unstructured.Unstructured{Object: obj(t, validWidget)}); len(got) != 0 {
		t.Errorf("v2 fields = %v", got)
	}
	if _, err := SelectableFields(crd, "v9"); err == nil {
		t.Error("SelectableFields accepted a version the CRD does not have")
	}
}
