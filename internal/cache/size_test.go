package cache

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

func TestSize(t *testing.T) {
	for _, retain := range []bool{false, true} {
		e := newEnv(t, func(c *Config) { c.RetainObjects = retain })
		a := e.codec.encode(t, newPod("a", "p1", "n1", nil))
		e.create(newPod("a", "p1", "n1", nil))
		e.create(newPod("a", "p2", "n2", nil))
		e.create(newPod("b", "p3", "n1", nil))
		rev := e.create(newPod("b", "p4", "n1", nil))
		e.waitRev(rev)
		per := int64(len(a)) // the pods differ only in same-length names
		node := func(n string) fields.Selector { return fields.OneTermEqualSelector("spec.nodeName", n) }
		tests := []struct {
			name  string
			ns    string
			label labels.Selector
			field fields.Selector
			want  Size
		}{
			{"all", "", nil, nil, Size{4, 4 * per}},
			{"namespace", "a", nil, nil, Size{2, 2 * per}},
			{"missing namespace", "c", nil, nil, Size{}},
			{"indexed field", "", nil, node("n1"), Size{3, 3 * per}},
			{"indexed field capped by the namespace", "a", nil, node("n1"), Size{2, 2 * per}},
			{"unindexed field", "a", nil, fields.OneTermEqualSelector("status.phase", "x"), Size{2, 2 * per}},
			{"unindexed label", "", labels.SelectorFromSet(labels.Set{"unindexed": "x"}), nil, Size{4, 4 * per}},
		}
		for _, tt := range tests {
			if got := e.c.Size(tt.ns, tt.label, tt.field); got != tt.want {
				t.Errorf("retain=%v %s: got %+v, want %+v", retain, tt.name, got, tt.want)
			}
		}
		// Replacing and deleting keep the books.
		e.update(newPod("a", "p1", "n2", nil))
		rev = e.delete("b", "p3")
		e.waitRev(rev)
		if got, want := e.c.Size("", nil, nil), (Size{3, 3 * per}); got != want {
			t.Errorf("retain=%v after update+delete: got %+v, want %+v", retain, got, want)
		}
		if got, want := e.c.Size("", nil, node("n2")), (Size{2, 2 * per}); got != want {
			t.Errorf("retain=%v n2 after update: got %+v, want %+v", retain, got, want)
		}
		rev = e.delete("b", "p4")
		e.waitRev(rev)
		if got := e.c.Size("b", nil, nil); got != (Size{}) {
			t.Errorf("retain=%v emptied namespace: %+v", retain, got)
		}
	}
}
