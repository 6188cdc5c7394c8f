package protoprune

import "google.golang.org/protobuf/encoding/protowire"

// Fields is a set of a protobuf message's fields by field number: a nil
// value stands for the whole field, a non-nil one for those fields of the
// message the field holds.
type Fields map[protowire.Number]Fields

// Append appends msg, a protobuf message, without the fields in drop to
// dst, in one pass. ok is false, and dst's contents beyond its original
// length undefined, if msg (or a message drop descends into) does not
// parse.
func Append(dst, msg []byte, drop Fields) (_ []byte, ok bool) {
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return dst, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return dst, false
		}
		sub, named := drop[num]
		switch {
		case !named:
			dst = append(dst, b[:n+m]...)
		case sub == nil:
			// dropped
		case typ != protowire.BytesType:
			return dst, false // drop descends into a message; this is not one
		default:
			inner, _ := protowire.ConsumeBytes(b[n:])
			if dst, ok = appendNested(dst, b[:n], inner, sub); !ok {
				return dst, false
			}
		}
		b = b[n+m:]
	}
	return dst, true
}

// appendNested appends tag, then inner pruned by drop as a length-prefixed
// message. The length is written after the content, in the room reserved
// for inner's own (the pruned one is no longer), moving the content down
// only when the shorter length takes fewer bytes.
func appendNested(dst, tag, inner []byte, drop Fields) ([]byte, bool) {
	dst = append(dst, tag...)
	room := protowire.SizeVarint(uint64(len(inner)))
	lenAt := len(dst)
	for range room {
		dst = append(dst, 0)
	}
	dst, ok := Append(dst, inner, drop)
	if !ok {
		return dst, false
	}
	size := len(dst) - lenAt - room
	if used := protowire.SizeVarint(uint64(size)); used < room {
		copy(dst[lenAt+used:], dst[lenAt+room:])
		dst = dst[:len(dst)-(room-used)]
	}
	protowire.AppendVarint(dst[lenAt:lenAt], uint64(size))
	return dst, true
}
