package registry

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func testControllerRevision(mutate ...func(*appsv1.ControllerRevision)) *appsv1.ControllerRevision {
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: "ns"},
		Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx"}]}}}}`)},
		Revision:   1,
	}
	for _, m := range mutate {
		m(cr)
	}
	return cr
}

func TestControllerRevisionValidation(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "apps", "controllerrevisions")
	cases := []struct {
		name   string
		mutate func(*appsv1.ControllerRevision)
		want   []string
	}{
		{"valid", func(*appsv1.ControllerRevision) {}, nil},
		{"revision zero", func(cr *appsv1.ControllerRevision) { cr.Revision = 0 }, nil},
		{"empty object data", func(cr *appsv1.ControllerRevision) { cr.Data.Raw = []byte(`{}`) }, nil},
		{"bad name", func(cr *appsv1.ControllerRevision) { cr.Name = "Bad_Name" }, []string{"Invalid value: metadata.name"}},
		{"no namespace", func(cr *appsv1.ControllerRevision) { cr.Namespace = "" }, []string{"Required value: metadata.namespace"}},
		{"no data", func(cr *appsv1.ControllerRevision) { cr.Data = runtime.RawExtension{} }, []string{"Required value: data"}},
		{"negative revision", func(cr *appsv1.ControllerRevision) { cr.Revision = -1 }, []string{"Invalid value: revision"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrs(t, create(r, testControllerRevision(tc.mutate)), tc.want...)
		})
	}
}

func TestControllerRevisionUpdate(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "apps", "controllerrevisions")
	cases := []struct {
		name   string
		mutate func(*appsv1.ControllerRevision)
		want   []string
	}{
		{"unchanged", func(*appsv1.ControllerRevision) {}, nil},
		// Upstream's controllers renumber a revision they bring back.
		{"revision changes", func(cr *appsv1.ControllerRevision) { cr.Revision = 7 }, nil},
		{"labels change", func(cr *appsv1.ControllerRevision) { cr.Labels = map[string]string{"a": "b"} }, nil},
		{"same data other whitespace", func(cr *appsv1.ControllerRevision) {
			cr.Data.Raw = []byte(`{ "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}} }`)
		}, nil},
		{"data changes", func(cr *appsv1.ControllerRevision) { cr.Data.Raw = []byte(`{"spec":{}}`) }, []string{"Invalid value: data"}},
		{"data removed", func(cr *appsv1.ControllerRevision) { cr.Data = runtime.RawExtension{} }, []string{"Required value: data", "Invalid value: data"}},
		{"negative revision", func(cr *appsv1.ControllerRevision) { cr.Revision = -2 }, []string{"Invalid value: revision"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := testControllerRevision()
			if errs := create(r, old); len(errs) != 0 {
				t.Fatal(errs)
			}
			old.ResourceVersion = "1"
			obj := old.DeepCopy()
			tc.mutate(obj)
			wantErrs(t, update(r, obj, old), tc.want...)
		})
	}
	rv := func(cr *appsv1.ControllerRevision) { cr.ResourceVersion = "1" }
	errs := update(r, testControllerRevision(rv, func(cr *appsv1.ControllerRevision) { cr.Data.Raw = []byte(`{"x":1}`) }), testControllerRevision(rv))
	if len(errs) != 1 || errs[0].Detail != "field is immutable" {
		t.Errorf("data change: got %v, want upstream's \"field is immutable\"", errs)
	}
}

func TestControllerRevisionTable(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "apps", "controllerrevisions")
	if got, want := columnNames(r), []string{"Name", "Controller", "Revision", "Age"}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
	yes := true
	owner := func(apiVersion, kind, name string, controller bool) func(*appsv1.ControllerRevision) {
		return func(cr *appsv1.ControllerRevision) {
			ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u"}
			if controller {
				ref.Controller = &yes
			}
			cr.OwnerReferences = append(cr.OwnerReferences, ref)
		}
	}
	cases := []struct {
		name string
		cr   *appsv1.ControllerRevision
		want map[string]interface{}
	}{
		{"no owner", testControllerRevision(), map[string]interface{}{
			"Name": "web-5d8f", "Controller": "<none>", "Revision": int64(1), "Age": "<unknown>"}},
		{"daemonset controller", testControllerRevision(owner("apps/v1", "DaemonSet", "web", true)), map[string]interface{}{
			"Name": "web-5d8f", "Controller": "daemonset.apps/web", "Revision": int64(1), "Age": "<unknown>"}},
		{"core group controller", testControllerRevision(owner("v1", "Pod", "p", true)), map[string]interface{}{
			"Name": "web-5d8f", "Controller": "pod/p", "Revision": int64(1), "Age": "<unknown>"}},
		{"owner but not controller", testControllerRevision(owner("apps/v1", "StatefulSet", "db", false)), map[string]interface{}{
			"Name": "web-5d8f", "Controller": "<none>", "Revision": int64(1), "Age": "<unknown>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cells(r, tc.cr); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("row %v, want %v", got, tc.want)
			}
		})
	}
}
