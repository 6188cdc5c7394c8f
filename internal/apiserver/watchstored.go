package apiserver

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/cache"
)

// Watch events from stored bytes. A relist by WatchList (client-go's
// default since v1.35) is a watch whose initial ADDED events are the whole
// state: 200,000 pods for an informer on all pods; and every Lease renewal
// is a MODIFIED event for the node lifecycle controller. Encoding them from
// decoded objects costs a decode and an encode per object; for protobuf
// clients each event is framed around the stored bytes instead, as
// protobuf lists are (liststream.go), and the cache never decodes it.

// watchesStored reports whether a watch in this format takes its events
// as stored bytes: protobuf objects, or protobuf PartialObjectMetadata
// (the garbage collector's and the quota controller's informers), whose
// one field is the object's field 1.
func (h *resourceHandler) watchesStored(choice mediaChoice) bool {
	return h.storedProtobuf && (choice.kind == outputObject || choice.kind == outputMetadata) &&
		choice.info.MediaType == runtime.ContentTypeProtobuf
}

// storedWatchEvent encodes an event carrying stored bytes exactly as
// encodeWatchEvent encodes the decoded object: a metav1.WatchEvent whose
// raw object is the protobuf envelope (magic, then a runtime.Unknown with
// the served TypeMeta) around the stored message, or only its metadata for
// a metadata watch, and a suffix setting its resourceVersion. scratch is
// reused for decompressing.
func (h *resourceHandler) storedWatchEvent(ev *cache.Event, choice mediaChoice, scratch *[]byte) ([]byte, error) {
	st := ev.Stored
	v, err := st.Value(scratch)
	if err != nil {
		return nil, fmt.Errorf("stored %s at revision %d: %w", st.Key, st.ModRevision, err)
	}
	off, n, err := envelopeObject(v, len(v))
	if err != nil {
		return nil, fmt.Errorf("stored %s at revision %d: %w", st.Key, st.ModRevision, err)
	}
	msg := v[off : off+n]
	typeMeta := runtime.TypeMeta{APIVersion: h.res.GroupVersion.String(), Kind: h.res.Kind}
	if choice.kind == outputMetadata {
		// metav1.PartialObjectMetadata is field 1, ObjectMeta, alone: the
		// object's own field 1 (storedProtobuf holds only for such kinds).
		if msg, err = metadataField(msg); err != nil {
			return nil, fmt.Errorf("stored %s at revision %d: %w", st.Key, st.ModRevision, err)
		}
		typeMeta = runtime.TypeMeta{APIVersion: partialMetaTypeMeta.APIVersion, Kind: partialMetaTypeMeta.Kind}
	}
	tm, err := typeMeta.Marshal()
	if err != nil {
		return nil, err
	}
	suffix := resourceVersionSuffix(ev.Revision)
	objLen := len(msg) + len(suffix)
	// runtime.Unknown: 1 TypeMeta, 2 Raw, then the empty ContentEncoding
	// and ContentType the serializer writes.
	unknownLen := 1 + varintLen(uint64(len(tm))) + len(tm) + 1 + varintLen(uint64(objLen)) + objLen + 4
	innerLen := len(protobufMagic) + unknownLen
	rawExtLen := 1 + varintLen(uint64(innerLen)) + innerLen
	typ := string(ev.Type)

	var b bytes.Buffer
	b.Grow(2 + len(typ) + 1 + varintLen(uint64(rawExtLen)) + rawExtLen)
	// metav1.WatchEvent: 1 Type, 2 Object (runtime.RawExtension: 1 Raw).
	writeField(&b, 1, []byte(typ))
	writeTag(&b, 2, uint64(rawExtLen))
	writeTag(&b, 1, uint64(innerLen))
	b.Write(protobufMagic)
	writeField(&b, 1, tm)
	writeTag(&b, 2, uint64(objLen))
	b.Write(msg)
	b.Write(suffix)
	b.Write([]byte{0x1a, 0x00, 0x22, 0x00})
	return b.Bytes(), nil
}

// metadataField returns the field-1 entries of the protobuf message msg
// (an object's metadata), as they are: a sub-slice when there is one.
func metadataField(msg []byte) ([]byte, error) {
	var out []byte
	for rest := msg; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, rest[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		if num == 1 {
			field := rest[:n+m]
			if out == nil {
				out = field
			} else {
				out = append(append([]byte(nil), out...), field...)
			}
		}
		rest = rest[n+m:]
	}
	return out, nil
}
