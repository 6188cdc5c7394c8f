package registry

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fixedNow is the clock every test registry uses.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestRegistry(t *testing.T) *Registry {
	t.Helper()
	reg, err := NewWithOptions(Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func mustLookup(t *testing.T, reg *Registry, group, resource string) *Resource {
	t.Helper()
	r, ok := reg.Lookup(schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource})
	if !ok {
		t.Fatalf("%s/%s not registered", group, resource)
	}
	return r
}

func TestRegistryConsistentWithScheme(t *testing.T) {
	reg := newTestRegistry(t)
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.Resources() {
		gvks, _, err := scheme.ObjectKinds(r.New())
		if err != nil || len(gvks) == 0 || gvks[0] != r.GroupVersionKind() {
			t.Errorf("%v: New() kinds %v, %v; want %v", r.GroupVersionResource(), gvks, err, r.GroupVersionKind())
		}
		lk, _, err := scheme.ObjectKinds(r.NewList())
		if err != nil || lk[0].Kind != r.Kind+"List" {
			t.Errorf("%v: NewList() kinds %v, %v", r.GroupVersionResource(), lk, err)
		}
		if got, ok := reg.LookupResource(r.GroupVersion, r.Resource); !ok || got != r {
			t.Errorf("LookupResource(%v, %q) = %v, %v", r.GroupVersion, r.Resource, got, ok)
		}
		if got, ok := reg.LookupKind(r.GroupVersionKind()); !ok || got != r {
			t.Errorf("LookupKind(%v) = %v, %v", r.GroupVersionKind(), got, ok)
		}
		// Every row lines up with the columns, even for an empty object.
		if cells, cols := r.Table.Cells(r.New()), r.Table.Columns(); len(cells) != len(cols) {
			t.Errorf("%v: %d cells for %d columns", r.GroupVersionResource(), len(cells), len(cols))
		}
		_ = r.SelectableFields(r.New())
	}
}
