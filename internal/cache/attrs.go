package cache

import (
	"hash/maphash"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Index attributes are kept compactly. A labels.Set and a fields.Set per
// entry cost about 590 bytes for a pod (two Go maps); here they are one
// slice of strings, label pairs sorted by key, then field pairs sorted by
// key:
//
//	[lk0 lv0 lk1 lv1 ... fk0 fv0 fk1 fv1 ...]
//
// Keys and values go through a small interning table, so a label value
// (an app name, a template hash) or a field value (a node name, a phase)
// repeated across thousands of objects is mostly one allocation.
//
// metadata.name and metadata.namespace are not stored when they equal the
// entry's key parts (they always do for the API server's attrs), nor are
// fields whose value is "": a field selector reads a missing field as "",
// and field reads here answer the two metadata fields from the key.

const (
	fieldName      = "metadata.name"
	fieldNamespace = "metadata.namespace"
)

// setAttrs stores l and f in e compactly. e's key must be set.
func (e *entry) setAttrs(in *Interner, l labels.Set, f fields.Set) {
	ns, name := e.ns(), e.name()
	keep := func(k, v string) bool {
		return v != "" && !(k == fieldName && v == name) && !(k == fieldNamespace && v == ns)
	}
	n := len(l)
	for k, v := range f {
		if keep(k, v) {
			n++
		}
	}
	if n == 0 {
		return
	}
	a := make([]string, 0, 2*n)
	for k, v := range l {
		a = append(a, in.intern(k), in.intern(v))
	}
	sortPairs(a)
	nl := len(a)
	for k, v := range f {
		if keep(k, v) {
			a = append(a, in.intern(k), in.intern(v))
		}
	}
	sortPairs(a[nl:])
	e.attrs = a
	e.nlabels = int32(nl)
}

// Interner shares the bytes of repeated strings. It is a fixed-size,
// direct-mapped table: a string that is already in its slot is shared, any
// other takes the slot. Strings that repeat (node names, app names, phases)
// stay in their slots; unique ones (pod IPs) only pass through, so the
// table neither grows nor keeps anything alive beyond its slots. It is safe
// for concurrent use.
type Interner struct {
	seed   maphash.Seed
	shards [internShards]internShard
}

const (
	internShards = 16
	internSlots  = 1 << 12 // per shard: 64k strings in all, about 1 MiB
)

type internShard struct {
	mu    sync.Mutex
	slots [internSlots]string
}

// NewInterner returns an empty table (about 1 MiB).
func NewInterner() *Interner { return &Interner{seed: maphash.MakeSeed()} }

func (in *Interner) intern(s string) string {
	if s == "" {
		return ""
	}
	h := maphash.String(in.seed, s)
	sh := &in.shards[h%internShards]
	i := (h / internShards) % internSlots
	sh.mu.Lock()
	if sh.slots[i] == s {
		s = sh.slots[i]
	} else {
		sh.slots[i] = s
	}
	sh.mu.Unlock()
	return s
}

// sortPairs sorts a's key/value pairs by key (insertion sort: a handful).
func sortPairs(a []string) {
	for i := 2; i < len(a); i += 2 {
		for j := i; j > 0 && a[j] < a[j-2]; j -= 2 {
			a[j], a[j-2] = a[j-2], a[j]
			a[j+1], a[j-1] = a[j-1], a[j+1]
		}
	}
}

// lookup finds key among a's sorted pairs.
func lookup(a []string, key string) (string, bool) {
	lo, hi := 0, len(a)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(a[2*m], key); {
		case c == 0:
			return a[2*m+1], true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return "", false
}

func (e *entry) labelPairs() []string { return e.attrs[:e.nlabels] }
func (e *entry) fieldPairs() []string { return e.attrs[e.nlabels:] }

// label returns the value of label k and whether e has it.
func (e *entry) label(k string) (string, bool) { return lookup(e.labelPairs(), k) }

// field returns the value of field k ("" when missing).
func (e *entry) field(k string) string {
	if v, ok := lookup(e.fieldPairs(), k); ok {
		return v
	}
	switch k {
	case fieldName:
		return e.name()
	case fieldNamespace:
		return e.ns()
	}
	return ""
}

// entryLabels is e as a labels.Labels, for label selectors.
type entryLabels entry

func (l *entryLabels) Has(k string) bool {
	_, ok := (*entry)(l).label(k)
	return ok
}

func (l *entryLabels) Get(k string) string {
	v, _ := (*entry)(l).label(k)
	return v
}

func (l *entryLabels) Lookup(k string) (string, bool) { return (*entry)(l).label(k) }

// entryFields is e as a fields.Fields, for field selectors.
type entryFields entry

func (f *entryFields) Has(k string) bool {
	e := (*entry)(f)
	if _, ok := lookup(e.fieldPairs(), k); ok {
		return true
	}
	return k == fieldName || k == fieldNamespace
}

func (f *entryFields) Get(k string) string { return (*entry)(f).field(k) }

var (
	_ labels.Labels = (*entryLabels)(nil)
	_ fields.Fields = (*entryFields)(nil)
)
