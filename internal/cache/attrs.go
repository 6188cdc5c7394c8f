package cache

import (
	"encoding/binary"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Index attributes are kept compactly. A labels.Set and a fields.Set per
// entry cost about 590 bytes for a pod (two Go maps); here they are one
// string of length-prefixed pairs, labels sorted by key, then fields
// sorted by key:
//
//	uvarint(len(k)) k uvarint(len(v)) v ...
//
// One string, not a slice of strings: at a million objects the garbage
// collector marks every pointer the cache holds on each cycle, and a
// string's bytes hold none (a slice of interned strings was ~18 pointers
// per pod). Lookups scan the pairs: an object has a handful.
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
func (e *entry) setAttrs(l labels.Set, f fields.Set) {
	ns, name := e.ns(), e.name()
	keep := func(k, v string) bool {
		return v != "" && !(k == fieldName && v == name) && !(k == fieldNamespace && v == ns)
	}
	var lk, fk []string
	size := 0
	for k, v := range l {
		lk = append(lk, k)
		size += pairSize(k, v)
	}
	for k, v := range f {
		if keep(k, v) {
			fk = append(fk, k)
			size += pairSize(k, v)
		}
	}
	if size == 0 {
		return
	}
	slices.Sort(lk)
	slices.Sort(fk)
	b := make([]byte, 0, size)
	for _, k := range lk {
		b = appendPair(b, k, l[k])
	}
	nl := len(b)
	for _, k := range fk {
		b = appendPair(b, k, f[k])
	}
	e.attrs = string(b)
	e.nlabels = int32(nl)
}

func pairSize(k, v string) int {
	return varintLen(len(k)) + len(k) + varintLen(len(v)) + len(v)
}

func appendPair(b []byte, k, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func varintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// lookup finds key among the pairs packed in a (which setAttrs wrote).
func lookup(a, key string) (string, bool) {
	for len(a) > 0 {
		k, rest := nextString(a)
		v, rest := nextString(rest)
		if k == key {
			return v, true
		}
		a = rest
	}
	return "", false
}

// nextString splits a length-prefixed string off the front of a.
func nextString(a string) (s, rest string) {
	n, shift, i := 0, 0, 0
	for ; a[i] >= 0x80; i++ {
		n |= int(a[i]&0x7f) << shift
		shift += 7
	}
	n |= int(a[i]) << shift
	i++
	return a[i : i+n], a[i+n:]
}

func (e *entry) labelPairs() string { return e.attrs[:e.nlabels] }
func (e *entry) fieldPairs() string { return e.attrs[e.nlabels:] }

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
