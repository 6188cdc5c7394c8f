package protoprune

import "google.golang.org/protobuf/encoding/protowire"

// Fields is a set of a protobuf message's fields by field number: a nil
// value stands for the whole field, a non-nil one for those fields of the
// message the field holds.
type Fields map[protowire.Number]Fields

// Size is the size of msg, a protobuf message, without the fields in
// drop, or -1 if msg (or a message drop descends into) does not parse.
func Size(msg []byte, drop Fields) int {
	size := 0
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return -1
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return -1
		}
		sub, named := drop[num]
		switch {
		case !named:
			size += n + m
		case sub == nil:
			// dropped
		case typ != protowire.BytesType:
			return -1 // drop descends into a message; this is not one
		default:
			inner, _ := protowire.ConsumeBytes(b[n:])
			s := Size(inner, sub)
			if s < 0 {
				return -1
			}
			size += n + protowire.SizeBytes(s)
		}
		b = b[n+m:]
	}
	return size
}

// Append appends msg without the fields in drop to dst. msg must be one
// Size accepted (Size(msg, drop) >= 0).
func Append(dst, msg []byte, drop Fields) []byte {
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		switch sub, named := drop[num]; {
		case !named:
			dst = append(dst, b[:n+m]...)
		case sub != nil:
			inner, _ := protowire.ConsumeBytes(b[n:])
			dst = append(dst, b[:n]...)
			dst = protowire.AppendVarint(dst, uint64(Size(inner, sub)))
			dst = Append(dst, inner, sub)
		}
		b = b[n+m:]
	}
	return dst
}
