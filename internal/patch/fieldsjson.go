package patch

import (
	"unicode/utf16"
	"unicode/utf8"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldsHas answers (*fieldpath.Set).Has(p) for the set whose fieldsV1
// encoding is raw, where want is p's elements serialized
// (fieldpath.SerializePathElement), by scanning raw instead of decoding it.
// A Lease's set is unique to its node (the kubelet owns its
// ownerReferences by uid), so decoding sets to ask this cost every renewal
// an allocation-heavy parse (structured-merge-diff reads through a 4-KB
// jsoniter buffer).
//
// Elements are compared by their text, which is sound for the canonical
// encoding upstream's encoder writes (keys' fields sorted, no spaces) and
// that every stored managedFields entry has. ok is false when raw is not
// an encoding the scan follows (not an object of objects, a key no
// path element could be); the answer is then unknown.
func fieldsHas(raw []byte, want []string) (has, ok bool) {
	if len(want) == 0 {
		return false, true
	}
	s := fieldsScanner{b: raw}
	if !s.consume('{') {
		return false, false
	}
	level := 0
	if s.consume('}') {
		return false, s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.consume(':') {
			return false, false
		}
		if jsonStringIs(key, want[level]) {
			if level == len(want)-1 {
				return s.member()
			}
			// Descend: the element's children. An object without
			// path-element keys has none, and the loop finds nothing.
			if !s.consume('{') {
				return false, false
			}
			level++
			if s.consume('}') {
				return false, true
			}
			continue
		}
		if !s.object(nil) {
			return false, false
		}
		switch {
		case s.consume(','):
		case s.consume('}'):
			return false, true // the element is not at this level
		default:
			return false, false
		}
	}
}

// serializePath is p's elements as fieldsHas wants them.
func serializePath(p fieldpath.Path) ([]string, bool) {
	out := make([]string, len(p))
	for i, pe := range p {
		if pe.FieldName != nil {
			// What SerializePathElement writes for a field, without
			// borrowing a jsoniter stream (it writes the name raw).
			out[i] = "f:" + *pe.FieldName
			continue
		}
		s, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// fieldsScanner walks the JSON of a fieldsV1 set: objects whose keys are
// serialized path elements and whose values are objects again.
type fieldsScanner struct {
	b []byte
	i int
}

func (s *fieldsScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *fieldsScanner) consume(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether nothing but space is left.
func (s *fieldsScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads a string and returns its bytes between the quotes, escapes
// left in.
func (s *fieldsScanner) str() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			out := s.b[start:s.i]
			s.i++
			return out, true
		case '\\':
			s.i += 2
		default:
			s.i++
		}
	}
	return nil, false
}

// object reads an object of objects (a set, or the value of any key in
// one), calling each, when not nil, with every key before reading its
// value; each returns false to give up, and object then does.
func (s *fieldsScanner) object(each func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.consume(':') || (each != nil && !each(key)) || !s.object(nil) {
			return false
		}
		switch {
		case s.consume(','):
		case s.consume('}'):
			return true
		default:
			return false
		}
	}
}

// member reads the object of the path's last element and reports whether
// that element is a member of the set, as structured-merge-diff decodes
// it: the object has the "." key, or no key that is a path element (an
// empty object is a leaf).
func (s *fieldsScanner) member() (has, ok bool) {
	dot, children := false, false
	ok = s.object(func(key []byte) bool {
		switch pathElementKind(key) {
		case elemDot:
			dot = true
		case elemKnown:
			children = true
		case elemInvalid:
			return false // decoding would fail
		}
		return true
	})
	return ok && (dot || !children), ok
}

type elemKind int

const (
	elemDot     elemKind = iota // "."
	elemKnown                   // f:, v:, k:, i:
	elemUnknown                 // another type, which decoding skips
	elemInvalid                 // not a path element at all
)

// pathElementKind classifies a key as DeserializePathElement would, by
// the first two bytes of its decoded text.
func pathElementKind(raw []byte) elemKind {
	var head [3]byte
	var buf [utf8.UTFMax]byte
	n := 0
	for i := 0; i < len(raw) && n < len(head); {
		b, next, ok := jsonBytes(raw, i, &buf)
		if !ok {
			return elemInvalid
		}
		n += copy(head[n:], b)
		i = next
	}
	switch {
	case n == 1 && head[0] == '.':
		return elemDot
	case n < 2 || head[1] != ':':
		return elemInvalid
	}
	switch head[0] {
	case 'f', 'v', 'k', 'i':
		return elemKnown
	}
	return elemUnknown
}

// jsonStringIs reports whether the JSON string contents raw (escapes in)
// decode to want.
func jsonStringIs(raw []byte, want string) bool {
	var buf [utf8.UTFMax]byte
	j := 0
	for i := 0; i < len(raw); {
		b, next, ok := jsonBytes(raw, i, &buf)
		if !ok || j+len(b) > len(want) || string(b) != want[j:j+len(b)] {
			return false
		}
		i, j = next, j+len(b)
	}
	return j == len(want)
}

// jsonBytes decodes the JSON string contents raw at i: one byte as it is,
// or an escape (a \u surrogate pair included) as UTF-8 in buf. next is
// where the following one starts.
func jsonBytes(raw []byte, i int, buf *[utf8.UTFMax]byte) (b []byte, next int, ok bool) {
	if raw[i] != '\\' {
		return raw[i : i+1], i + 1, true
	}
	if i+1 >= len(raw) {
		return nil, 0, false
	}
	var r rune
	w := 2
	switch c := raw[i+1]; c {
	case '"', '\\', '/':
		r = rune(c)
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		r1, ok := hex4(raw, i+2)
		if !ok {
			return nil, 0, false
		}
		r, w = r1, 6
		if utf16.IsSurrogate(r1) {
			r = utf8.RuneError
			if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if r2, ok := hex4(raw, i+8); ok {
					if d := utf16.DecodeRune(r1, r2); d != utf8.RuneError {
						r, w = d, 12
					}
				}
			}
		}
	default:
		return nil, 0, false
	}
	return buf[:utf8.EncodeRune(buf[:], r)], i + w, true
}

func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[i : i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
