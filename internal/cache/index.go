package cache

import (
	"strings"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// entry is one version of one object. Entries are immutable once built and
// shared by the state, the indexes and the window.
type entry struct {
	key string // full storage key
	// obj is the decoded object when Config.RetainObjects is set;
	// otherwise raw holds the stored bytes and reads decode them. For a
	// value that does not decode, obj is an *undecodable (corrupt.go)
	// in either mode and raw is nil.
	obj       runtime.Object
	raw       []byte
	rev       int64 // ModRevision
	createRev int64
	// attrs are the labels and selectable fields (attrs.go).
	attrs   string
	nlabels int32
	// The namespace and name are key[nsOff:nameOff-1] and key[nameOff:];
	// nsOff == nameOff for a cluster-scoped key (setKey). Offsets rather
	// than strings keep the entry in a smaller size class.
	nsOff, nameOff int32
	// size is the stored value's length in bytes, for Size: what a list
	// of the object costs to read and encode, roughly.
	size int32
}

// setKey sets e's key, below prefix.
func (e *entry) setKey(prefix, key string) {
	e.key = key
	rest := strings.TrimPrefix(key, prefix)
	base := len(key) - len(rest)
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		e.nsOff, e.nameOff = int32(base), int32(base+i+1)
	} else {
		e.nsOff, e.nameOff = int32(base), int32(base)
	}
}

// ns is e's namespace ("" for cluster-scoped keys).
func (e *entry) ns() string {
	if e.nsOff == e.nameOff {
		return ""
	}
	return e.key[e.nsOff : e.nameOff-1]
}

// name is e's name.
func (e *entry) name() string { return e.key[e.nameOff:] }

func lessEntry(a, b *entry) bool { return a.key < b.key }

// btree degree: 32 keeps nodes at about a cache line of pointers per item
// group and the tree 3–4 levels deep at 200k objects.
const btreeDegree = 32

func newTree() *btree.BTreeG[*entry] { return btree.NewG(btreeDegree, lessEntry) }

// indexKey names one secondary index bucket: kind is "f:"+field or
// "l:"+label ("ns" for the namespace, used only by watch dispatch).
type indexKey struct {
	index string
	value string
}

// state is the latest version of every object plus its secondary indexes.
// It is guarded by Cache.mu.
type state struct {
	prefix  string
	all     *btree.BTreeG[*entry]
	fields  []string
	labels  []string
	byValue map[indexKey]*btree.BTreeG[*entry]
	// total and byNS are the objects and bytes held, in all and per
	// namespace, kept by put and remove so Size answers without a walk.
	total Size
	byNS  map[string]Size
}

func newState(prefix string, indexedFields, indexedLabels []string) *state {
	return &state{
		prefix:  prefix,
		all:     newTree(),
		fields:  indexedFields,
		labels:  indexedLabels,
		byValue: make(map[indexKey]*btree.BTreeG[*entry]),
		byNS:    make(map[string]Size),
	}
}

// account adds e (sign 1) or takes it away (sign -1) from the sizes.
func (s *state) account(e *entry, sign int64) {
	d := Size{Objects: sign, Bytes: sign * int64(e.size)}
	s.total = s.total.add(d)
	ns := e.ns()
	if ns == "" {
		return
	}
	n := s.byNS[ns].add(d)
	if n.Objects == 0 {
		delete(s.byNS, ns)
		return
	}
	s.byNS[ns] = n
}

// indexKeys appends the secondary-index buckets e belongs to. A field is
// indexed under its value even when empty (spec.nodeName="" is how the
// scheduler asks for unscheduled pods; a field selector treats a missing
// field as ""); a label only when present, as label selectors require.
func (s *state) indexKeysFor(dst []indexKey, e *entry) []indexKey {
	return appendIndexKeys(dst, s.fields, s.labels, e)
}

func appendIndexKeys(dst []indexKey, indexedFields, indexedLabels []string, e *entry) []indexKey {
	for _, f := range indexedFields {
		dst = append(dst, indexKey{"f:" + f, e.field(f)})
	}
	for _, l := range indexedLabels {
		if v, ok := e.label(l); ok {
			dst = append(dst, indexKey{"l:" + l, v})
		}
	}
	return dst
}

// put stores e and returns the version it replaced, if any.
func (s *state) put(e *entry) *entry {
	prev, _ := s.all.ReplaceOrInsert(e)
	s.account(e, 1)
	var buf [8]indexKey
	if prev != nil {
		s.account(prev, -1)
		for _, k := range s.indexKeysFor(buf[:0], prev) {
			s.removeFromIndex(k, prev)
		}
	}
	for _, k := range s.indexKeysFor(buf[:0], e) {
		t := s.byValue[k]
		if t == nil {
			t = newTree()
			s.byValue[k] = t
		}
		t.ReplaceOrInsert(e)
	}
	return prev
}

// remove deletes key and returns the version removed, if any.
func (s *state) remove(key string) *entry {
	prev, ok := s.all.Delete(&entry{key: key})
	if !ok {
		return nil
	}
	s.account(prev, -1)
	var buf [8]indexKey
	for _, k := range s.indexKeysFor(buf[:0], prev) {
		s.removeFromIndex(k, prev)
	}
	return prev
}

func (s *state) removeFromIndex(k indexKey, e *entry) {
	t := s.byValue[k]
	if t == nil {
		return
	}
	t.Delete(e)
	if t.Len() == 0 {
		// Values come and go (nodes, app names); empty buckets would
		// otherwise accumulate for ever.
		delete(s.byValue, k)
	}
}

func (s *state) get(key string) *entry {
	e, _ := s.all.Get(&entry{key: key})
	return e
}

// predicate is a list or watch filter.
type predicate struct {
	namespace string
	name      string // required metadata.name, from the field selector
	hasName   bool
	label     labels.Selector // nil or empty: everything
	field     fields.Selector // nil or empty: everything
}

func newPredicate(ns string, l labels.Selector, f fields.Selector) predicate {
	if l != nil && l.Empty() {
		l = nil
	}
	if f != nil && f.Empty() {
		f = nil
	}
	p := predicate{namespace: ns, label: l, field: f}
	if f != nil {
		p.name, p.hasName = f.RequiresExactMatch("metadata.name")
	}
	return p
}

func (p *predicate) matches(e *entry) bool {
	if p.namespace != "" && e.ns() != p.namespace {
		return false
	}
	if p.label != nil && !p.label.Matches((*entryLabels)(e)) {
		return false
	}
	if p.field != nil && !p.field.Matches((*entryFields)(e)) {
		return false
	}
	return true
}

// selectorsEmpty reports whether only the namespace restricts p.
func (p *predicate) selectorsEmpty() bool { return p.label == nil && p.field == nil }

// indexFor picks the secondary index that restricts p to the fewest
// objects it can know of without counting: an indexed field required to
// equal a value, else an indexed label. ok is false when neither applies.
func (p *predicate) indexFor(indexedFields, indexedLabels []string) (indexKey, bool) {
	if p.field != nil {
		for _, f := range indexedFields {
			if v, found := p.field.RequiresExactMatch(f); found {
				return indexKey{"f:" + f, v}, true
			}
		}
	}
	if p.label != nil {
		for _, l := range indexedLabels {
			if v, found := p.label.RequiresExactMatch(l); found {
				return indexKey{"l:" + l, v}, true
			}
		}
	}
	return indexKey{}, false
}
