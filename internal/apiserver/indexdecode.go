package apiserver

import (
	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// objectMetaManagedFields is metadata.managedFields' field number in
// ObjectMeta's protobuf message.
const objectMetaManagedFields = 17

// decodeForIndex is decode without metadata.managedFields, for the watch
// cache, which decodes every object only to index its labels and fields:
// in a typical stored pod managedFields are a third of the bytes and most
// of what decoding allocates. A value it cannot take apart (another
// layout, damage) goes through decode, which reports it.
func (o *objectStore) decodeForIndex(kv storage.KeyValue) (runtime.Object, error) {
	if !o.metaField1 {
		return o.decode(kv)
	}
	obj := o.res.New()
	u, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return o.decode(kv)
	}
	msg, err := unknownRaw(kv.Value)
	if err != nil {
		return o.decode(kv)
	}
	stripped, ok := withoutManagedFields(msg)
	if !ok {
		return o.decode(kv)
	}
	if err := u.Unmarshal(stripped); err != nil {
		return nil, corruptValue(kv, err)
	}
	return o.withRevision(obj, kv.ModRevision)
}

// withoutManagedFields returns msg, an object message whose field 1 is its
// ObjectMeta, without ObjectMeta's managedFields entries: msg itself when
// it has none, else a copy. ok is false when msg does not parse.
func withoutManagedFields(msg []byte) (_ []byte, ok bool) {
	var out []byte // nil until something is dropped
	for off := 0; off < len(msg); {
		num, typ, n := protowire.ConsumeTag(msg[off:])
		if n < 0 {
			return nil, false
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[off+n:])
		if m < 0 {
			return nil, false
		}
		field := msg[off : off+n+m]
		off += n + m
		if num == 1 && typ == protowire.BytesType {
			objMeta, _ := protowire.ConsumeBytes(field[n:])
			kept, dropped, ok := dropField(objMeta, objectMetaManagedFields)
			if !ok {
				return nil, false
			}
			if dropped {
				if out == nil {
					out = append(make([]byte, 0, len(msg)), msg[:off-len(field)]...)
				}
				out = protowire.AppendTag(out, 1, protowire.BytesType)
				out = protowire.AppendBytes(out, kept)
				continue
			}
		}
		if out != nil {
			out = append(out, field...)
		}
	}
	if out == nil {
		return msg, true
	}
	return out, true
}

// dropField returns msg without every occurrence of field num, and
// whether there was one.
func dropField(msg []byte, num protowire.Number) (kept []byte, dropped, ok bool) {
	for b := msg; len(b) > 0; {
		fnum, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false, false
		}
		m := protowire.ConsumeFieldValue(fnum, typ, b[n:])
		if m < 0 {
			return nil, false, false
		}
		if fnum == num {
			dropped = true
		} else {
			kept = append(kept, b[:n+m]...)
		}
		b = b[n+m:]
	}
	if !dropped {
		return msg, false, true
	}
	return kept, true, true
}
