package cache

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// The compact attributes must match every selector as the sets they were
// built from do.
func TestEntryAttrsMatchLikeSets(t *testing.T) {
	ls := labels.Set{"app": "web", "tier": "front", "pod-template-hash": "abc", "z": ""}
	cases := []struct {
		name string
		ns   string
		fs   fields.Set
	}{
		{"p1", "default", fields.Set{"metadata.name": "p1", "metadata.namespace": "default", "spec.nodeName": "node-1", "status.phase": "Running", "status.nominatedNodeName": ""}},
		{"n1", "", fields.Set{"metadata.name": "n1", "spec.unschedulable": "false"}},
		{"odd", "ns", fields.Set{"metadata.name": "other", "metadata.namespace": "elsewhere"}},
		{"none", "ns", nil},
	}
	lsels := []string{"", "app=web", "app!=web", "app=db", "app", "!app", "missing", "!missing",
		"app in (web,db)", "app notin (web)", "tier=front,app=web", "z=", "z", "pod-template-hash=abc,tier!=back"}
	fsels := []string{"", "metadata.name=p1", "metadata.name!=p1", "metadata.namespace=default", "metadata.namespace=",
		"metadata.namespace!=default", "spec.nodeName=node-1", "spec.nodeName=", "spec.nodeName!=node-2,status.phase=Running",
		"metadata.name=other", "metadata.namespace=elsewhere", "spec.unschedulable=false", "missing="}
	for _, tc := range cases {
		for _, lab := range []labels.Set{ls, nil} {
			e := &entry{}
			if tc.ns == "" {
				e.setKey("/r/", "/r/"+tc.name)
			} else {
				e.setKey("/r/", "/r/"+tc.ns+"/"+tc.name)
			}
			if e.ns() != tc.ns || e.name() != tc.name {
				t.Fatalf("key %q: ns %q name %q", e.key, e.ns(), e.name())
			}
			e.setAttrs(lab, tc.fs)
			for _, s := range lsels {
				sel, err := labels.Parse(s)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := sel.Matches((*entryLabels)(e)), sel.Matches(lab); got != want {
					t.Errorf("%s: label %q on %v: got %v, want %v", tc.name, s, lab, got, want)
				}
			}
			for _, s := range fsels {
				sel, err := fields.ParseSelector(s)
				if err != nil {
					t.Fatal(err)
				}
				// The key's namespace and name stand in for absent fields.
				want := fields.Set{"metadata.name": tc.name, "metadata.namespace": tc.ns}
				for k, v := range tc.fs {
					want[k] = v
				}
				if got, want := sel.Matches((*entryFields)(e)), sel.Matches(want); got != want {
					t.Errorf("%s: field %q: got %v, want %v", tc.name, s, got, want)
				}
			}
			for k, v := range lab {
				if got, ok := e.label(k); !ok || got != v {
					t.Errorf("label %q = %q, %v", k, got, ok)
				}
			}
		}
	}
}
