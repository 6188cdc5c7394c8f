package apiserver

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/myriad-k8s/myriad/internal/cache"
)

// A relist by WatchList (client-go's default since v1.35) is a watch whose
// initial ADDED events are the whole state: 200,000 pods for an informer on
// all pods. Encoding them from decoded objects costs a decode and an encode
// per pod; for protobuf clients the cache hands the stored bytes instead and
// the event is framed around them, as protobuf lists are (liststream.go).

// watchesStored reports whether a watch in this format takes its initial
// events as stored bytes.
func (h *resourceHandler) watchesStored(choice mediaChoice) bool {
	return h.storedProtobuf && choice.kind == outputObject && choice.info.MediaType == runtime.ContentTypeProtobuf
}

// storedWatchEvent encodes an ADDED event carrying stored bytes exactly as
// encodeWatchEvent encodes the decoded object: a metav1.WatchEvent whose
// raw object is the protobuf envelope (magic, then a runtime.Unknown with
// the served TypeMeta) around the stored message and a suffix setting its
// resourceVersion. scratch is reused for decompressing.
func (h *resourceHandler) storedWatchEvent(ev *cache.Event, scratch *[]byte) ([]byte, error) {
	st := ev.Stored
	v, err := st.Value(scratch)
	if err != nil {
		return nil, fmt.Errorf("stored %s at revision %d: %w", st.Key, st.ModRevision, err)
	}
	off, n, err := envelopeObject(v, len(v))
	if err != nil {
		return nil, fmt.Errorf("stored %s at revision %d: %w", st.Key, st.ModRevision, err)
	}
	tm, err := (&runtime.TypeMeta{APIVersion: h.res.GroupVersion.String(), Kind: h.res.Kind}).Marshal()
	if err != nil {
		return nil, err
	}
	suffix := resourceVersionSuffix(ev.Revision)
	objLen := n + len(suffix)
	// runtime.Unknown: 1 TypeMeta, 2 Raw, then the empty ContentEncoding
	// and ContentType the serializer writes.
	unknownLen := 1 + varintLen(uint64(len(tm))) + len(tm) + 1 + varintLen(uint64(objLen)) + objLen + 4
	innerLen := len(protobufMagic) + unknownLen
	rawExtLen := 1 + varintLen(uint64(innerLen)) + innerLen
	typ := string(watch.Added)

	var b bytes.Buffer
	b.Grow(2 + len(typ) + 1 + varintLen(uint64(rawExtLen)) + rawExtLen)
	// metav1.WatchEvent: 1 Type, 2 Object (runtime.RawExtension: 1 Raw).
	writeField(&b, 1, []byte(typ))
	writeTag(&b, 2, uint64(rawExtLen))
	writeTag(&b, 1, uint64(innerLen))
	b.Write(protobufMagic)
	writeField(&b, 1, tm)
	writeTag(&b, 2, uint64(objLen))
	b.Write(v[off : off+n])
	b.Write(suffix)
	b.Write([]byte{0x1a, 0x00, 0x22, 0x00})
	return b.Bytes(), nil
}
