package protoprune

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// msg builds a message from (number, value) pairs: a []byte value is a
// length-delimited field, a uint64 a varint.
func msg(fields ...any) []byte {
	var b []byte
	for i := 0; i < len(fields); i += 2 {
		num := protowire.Number(fields[i].(int))
		switch v := fields[i+1].(type) {
		case []byte:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendBytes(b, v)
		case uint64:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
	}
	return b
}

// podLike is what the API server prunes: metadata less managedFields (17),
// spec less containers (2), status less container statuses (8).
var podLike = Fields{1: {17: nil}, 2: {2: nil}, 3: {8: nil}}

func TestPrune(t *testing.T) {
	meta := msg(1, []byte("name"), 17, []byte("managed fields"), 3, []byte("ns"))
	spec := msg(2, []byte("container a"), 10, []byte("node-1"), 2, []byte("container b"))
	for _, tc := range []struct {
		name string
		in   []byte
		drop Fields
		want []byte
	}{
		{"nothing named", msg(1, meta, 4, uint64(7)), nil, msg(1, meta, 4, uint64(7))},
		{"top-level field", msg(1, meta, 2, spec, 4, uint64(7)), Fields{2: nil}, msg(1, meta, 4, uint64(7))},
		{"nested fields, every occurrence", msg(1, meta, 2, spec), podLike,
			msg(1, msg(1, []byte("name"), 3, []byte("ns")), 2, msg(10, []byte("node-1")))},
		{"a field repeated at the top", msg(2, spec, 2, spec), podLike,
			msg(2, msg(10, []byte("node-1")), 2, msg(10, []byte("node-1")))},
		{"named but absent", msg(4, uint64(1)), podLike, msg(4, uint64(1))},
		{"empty message", nil, podLike, nil},
		{"everything dropped", msg(2, msg(2, []byte("c"))), Fields{2: {2: nil}}, msg(2, []byte{})},
		{"a high field number", msg(1, meta, 300, []byte("x"), 4, uint64(7)), Fields{300: nil}, msg(1, meta, 4, uint64(7))},
		{"into a high field number", msg(300, spec), Fields{300: {2: nil}}, msg(300, msg(10, []byte("node-1")))},
		{"an empty set descends and keeps", msg(2, spec), Fields{2: {}}, msg(2, spec)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("kept")
			got, ok := Compile(tc.drop).Append(append([]byte(nil), prefix...), tc.in)
			if !ok || !bytes.Equal(got, append(prefix, tc.want...)) {
				t.Errorf("got %x, %v; want %x after the prefix", got, ok, tc.want)
			}
		})
	}
}

// What does not parse, or is not a message where drop descends, is
// refused rather than pruned wrongly.
func TestPruneRefuses(t *testing.T) {
	valid := msg(1, msg(17, []byte("x")))
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"truncated", valid[:len(valid)-1]},
		{"bad tag", []byte{0x00}},
		{"length past the end", []byte{0x0a, 0x05, 0x01}},
		{"varint where drop descends", msg(1, uint64(3))},
		{"nested garbage", msg(1, []byte{0x0a, 0x09})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := Compile(podLike).Append(nil, tc.in); ok {
				t.Errorf("Append = %x, true; want a refusal", got)
			}
		})
	}
}

// A nested message whose pruned length takes fewer bytes than its original
// one (128 bytes or more down to under 128) has its content moved down.
func TestPruneShortensLengthPrefix(t *testing.T) {
	inner := msg(1, []byte("name"), 17, bytes.Repeat([]byte("m"), 200))
	got, ok := Compile(podLike).Append(nil, msg(1, inner, 4, uint64(9)))
	want := msg(1, msg(1, []byte("name")), 4, uint64(9))
	if !ok || !bytes.Equal(got, want) {
		t.Errorf("got %x, %v; want %x", got, ok, want)
	}
}

// prunedSize is an independent statement of what Append must write: the
// size of msg without the fields in drop, -1 if it does not parse.
func prunedSize(msg []byte, drop Fields) int {
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
		case typ != protowire.BytesType:
			return -1
		default:
			inner, _ := protowire.ConsumeBytes(b[n:])
			s := prunedSize(inner, sub)
			if s < 0 {
				return -1
			}
			size += n + protowire.SizeBytes(s)
		}
		b = b[n+m:]
	}
	return size
}

// FuzzPrune: whatever the bytes, no panic; Append accepts exactly what
// parses, writes exactly prunedSize bytes, and prunes its output again
// unchanged.
func FuzzPrune(f *testing.F) {
	f.Add(msg(1, msg(1, []byte("n"), 17, []byte("m")), 2, msg(2, []byte("c"), 10, []byte("node")), 3, msg(8, []byte("s"), 1, []byte("Running"))))
	f.Add([]byte{0x0a, 0x02, 0x8a, 0x01})
	f.Add([]byte{0x12, 0x03, 0x0a, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		size := prunedSize(in, podLike)
		out, ok := Compile(podLike).Append(nil, in)
		if ok != (size >= 0) {
			t.Fatalf("Append ok %v, prunedSize %d", ok, size)
		}
		if !ok {
			return
		}
		if len(out) != size {
			t.Fatalf("pruned to %d bytes, want %d", len(out), size)
		}
		if again, ok := Compile(podLike).Append(nil, out); !ok || !bytes.Equal(again, out) {
			t.Fatalf("output does not prune again unchanged")
		}
	})
}
