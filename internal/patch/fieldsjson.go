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
		if !s.skipObject() {
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

// skipObject skips an object of objects (the value of any key in a set).
func (s *fieldsScanner) skipObject() bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		if _, ok := s.str(); !ok || !s.consume(':') || !s.skipObject() {
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
	if !s.consume('{') {
		return false, false
	}
	if s.consume('}') {
		return true, true
	}
	dot, children := false, false
	for {
		key, ok := s.str()
		if !ok || !s.consume(':') || !s.skipObject() {
			return false, false
		}
		switch kind := pathElementKind(key); kind {
		case elemDot:
			dot = true
		case elemKnown:
			children = true
		case elemInvalid:
			return false, false // decoding would fail
		}
		switch {
		case s.consume(','):
		case s.consume('}'):
			return dot || !children, true
		default:
			return false, false
		}
	}
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
	n := 0
	for i := 0; i < len(raw) && n < len(head); {
		if raw[i] != '\\' {
			head[n] = raw[i]
			i++
			n++
			continue
		}
		r, w, ok := jsonRune(raw, i)
		if !ok {
			return elemInvalid
		}
		i += w
		var enc [utf8.UTFMax]byte
		n += copy(head[n:], enc[:utf8.EncodeRune(enc[:], r)])
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
	j := 0
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			// Unescaped bytes compare as they are.
			if j >= len(want) || raw[i] != want[j] {
				return false
			}
			i++
			j++
			continue
		}
		r, w, ok := jsonRune(raw, i)
		if !ok {
			return false
		}
		i += w
		var enc [utf8.UTFMax]byte
		n := utf8.EncodeRune(enc[:], r)
		if j+n > len(want) || string(enc[:n]) != want[j:j+n] {
			return false
		}
		j += n
	}
	return j == len(want)
}

// jsonRune decodes the character of raw at i: a UTF-8 sequence or an
// escape, a \u surrogate pair included. w is how many bytes it took.
func jsonRune(raw []byte, i int) (r rune, w int, ok bool) {
	if raw[i] != '\\' {
		r, w = utf8.DecodeRune(raw[i:])
		return r, w, true
	}
	if i+1 >= len(raw) {
		return 0, 0, false
	}
	switch c := raw[i+1]; c {
	case '"', '\\', '/':
		return rune(c), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		r1, ok := hex4(raw, i+2)
		if !ok {
			return 0, 0, false
		}
		if utf16.IsSurrogate(r1) {
			if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if r2, ok := hex4(raw, i+8); ok {
					if d := utf16.DecodeRune(r1, r2); d != utf8.RuneError {
						return d, 12, true
					}
				}
			}
			return utf8.RuneError, 6, true
		}
		return r1, 6, true
	}
	return 0, 0, false
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
