package cache

import (
	"encoding/binary"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Index attributes are kept compactly. A labels.Set and a fields.Set per
// entry cost about 590 bytes for a pod (two Go maps); here they are one
// string of length-prefixed pairs, the labels, then the fields (in map
// order: lookups scan the pairs, an object has a handful):
//
//	uvarint(len(k)) k uvarint(len(v)) v ...
//
// One string, not a slice of strings: at a million objects the garbage
// collector marks every pointer the cache holds on each cycle, and a
// string's bytes hold none (a slice of interned strings was ~18 pointers
// per pod).
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
	size := 0
	for k, v := range l {
		size += pairSize(k, v)
	}
	for k, v := range f {
		if keep(k, v) {
			size += pairSize(k, v)
		}
	}
	if size == 0 {
		return
	}
	var b strings.Builder // its String does not copy
	b.Grow(size)
	for k, v := range l {
		writePair(&b, k, v)
	}
	nl := b.Len()
	for k, v := range f {
		if keep(k, v) {
			writePair(&b, k, v)
		}
	}
	e.attrs = b.String()
	e.nlabels = int32(nl)
}

func pairSize(k, v string) int {
	return protowire.SizeBytes(len(k)) + protowire.SizeBytes(len(v))
}

func writePair(b *strings.Builder, k, v string) {
	var n [binary.MaxVarintLen64]byte
	b.Write(binary.AppendUvarint(n[:0], uint64(len(k))))
	b.WriteString(k)
	b.Write(binary.AppendUvarint(n[:0], uint64(len(v))))
	b.WriteString(v)
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
