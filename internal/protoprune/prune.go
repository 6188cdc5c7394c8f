package protoprune

import "google.golang.org/protobuf/encoding/protowire"

// Fields is a set of a protobuf message's fields by field number: a nil
// value stands for the whole field, a non-nil one for those fields of the
// message the field holds.
type Fields map[protowire.Number]Fields

// Plan is a Fields set compiled for Append: what to do with each field is
// found by indexing a slice, not by a map lookup per field of every
// message (a pod has a few hundred).
type Plan struct {
	// dense holds the fields numbered below len(dense); the rest (rare:
	// Kubernetes' messages number their fields from 1 up) are in sparse.
	dense  []action
	sparse map[protowire.Number]action
}

type action struct {
	drop bool  // the whole field
	sub  *Plan // else, when not nil, the message it holds is pruned by sub
}

// maxDense bounds the slice a Plan indexes by field number.
const maxDense = 256

// Compile returns the Plan that drops drop's fields. A nil or empty drop
// gives a Plan that keeps everything.
func Compile(drop Fields) *Plan {
	p := &Plan{}
	for num, sub := range drop {
		a := action{drop: sub == nil}
		if sub != nil {
			a.sub = Compile(sub)
		}
		if num < maxDense {
			if int(num) >= len(p.dense) {
				p.dense = append(p.dense, make([]action, int(num)+1-len(p.dense))...)
			}
			p.dense[num] = a
			continue
		}
		if p.sparse == nil {
			p.sparse = map[protowire.Number]action{}
		}
		p.sparse[num] = a
	}
	return p
}

func (p *Plan) action(num protowire.Number) action {
	if num >= 0 && int(num) < len(p.dense) {
		return p.dense[num]
	}
	return p.sparse[num]
}

// Append appends msg, a protobuf message, without the fields p drops to
// dst, in one pass. ok is false, and dst's contents beyond its original
// length undefined, if msg (or a message p descends into) does not parse.
func (p *Plan) Append(dst, msg []byte) (_ []byte, ok bool) {
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return dst, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return dst, false
		}
		a := p.action(num)
		switch {
		case a.drop:
			// dropped
		case a.sub == nil:
			dst = append(dst, b[:n+m]...)
		case typ != protowire.BytesType:
			return dst, false // p descends into a message; this is not one
		default:
			inner, _ := protowire.ConsumeBytes(b[n:])
			if dst, ok = a.sub.appendNested(dst, b[:n], inner); !ok {
				return dst, false
			}
		}
		b = b[n+m:]
	}
	return dst, true
}

// appendNested appends tag, then inner pruned by p as a length-prefixed
// message. The length is written after the content, in the room reserved
// for inner's own (the pruned one is no longer), moving the content down
// only when the shorter length takes fewer bytes.
func (p *Plan) appendNested(dst, tag, inner []byte) ([]byte, bool) {
	dst = append(dst, tag...)
	room := protowire.SizeVarint(uint64(len(inner)))
	lenAt := len(dst)
	for range room {
		dst = append(dst, 0)
	}
	dst, ok := p.Append(dst, inner)
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
