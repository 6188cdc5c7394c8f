package apiserver

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/cache"
)

// Large lists are written while the cache produces them: each item is
// decoded, encoded and dropped, so a list of 200,000 pods never holds a
// second copy of the collection (the cache keeps stored bytes; a collected
// list would be a full decoded copy). JSON streams item by item with the
// list's metadata after the items (JSON object members are unordered, and
// the list's resourceVersion is known only once the cache has answered).
// Protobuf needs the total length up front, so it keeps each item's
// encoding — the size of the response itself, not of decoded objects.

// listWriter returns a 64 KiB buffered writer onto w from the server's pool.
// A list handed to the HTTP/2 server in pieces that large costs one hand-off
// to the connection's goroutine per 64 KiB instead of per 4 KiB (its own
// buffer's size); pooling them keeps a 64 KiB allocation per list (the
// largest allocation of a small list, ~100 MB/s of garbage at 1,500 lists
// by node per second) off the heap.
func (s *Server) listWriter(w io.Writer) *bufio.Writer {
	if bw, ok := s.listWriters.Get().(*bufio.Writer); ok {
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, 64<<10)
}

// releaseListWriter returns bw to the pool, dropping anything unflushed.
func (s *Server) releaseListWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	s.listWriters.Put(bw)
}

// streamable reports whether the negotiated format is streamed here:
// objects as JSON or protobuf, and metadata as protobuf when the stored
// bytes hold it (the garbage collector's and quota controller's lists).
func (h *resourceHandler) streamable(choice mediaChoice) bool {
	if choice.pretty {
		return false
	}
	switch choice.kind {
	case outputObject:
		return choice.info.MediaType == runtime.ContentTypeJSON || choice.info.MediaType == runtime.ContentTypeProtobuf
	case outputMetadata:
		return h.storedProtobuf && choice.info.MediaType == runtime.ContentTypeProtobuf
	}
	return false
}

// streamList lists through the cache straight into the response.
func (h *resourceHandler) streamList(w http.ResponseWriter, r *http.Request, choice mediaChoice, opts cache.ListOptions) error {
	if choice.info.MediaType == runtime.ContentTypeProtobuf {
		return h.streamProtobufList(w, r, opts, choice.kind == outputMetadata)
	}
	return h.streamJSONList(w, r, opts)
}

func (h *resourceHandler) streamJSONList(w http.ResponseWriter, r *http.Request, opts cache.ListOptions) error {
	bw := h.s.listWriter(w)
	defer h.s.releaseListWriter(bw)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(bw, `{"kind":%q,"apiVersion":%q,"items":[`, h.res.Kind+"List", h.res.GroupVersion.String())
	}
	enc := h.s.codecs.json.Serializer
	n := 0
	res, err := h.cache.List(r.Context(), opts, func(obj runtime.Object) error {
		start()
		if n > 0 {
			_ = bw.WriteByte(',')
		}
		n++
		return enc.Encode(obj, bw)
	})
	if err != nil {
		if !started {
			return err
		}
		// The status line is gone: end the body early so the client sees a
		// truncated (undecodable) list rather than a short, valid one.
		h.s.log.Warn("list failed while streaming", "resource", h.res.Resource, "err", err)
		abortResponse()
	}
	start()
	meta, err := json.Marshal(metav1.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue, RemainingItemCount: res.RemainingItemCount})
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, `],"metadata":%s}`, meta)
	return bw.Flush()
}

// pbItem is one list item as protobuf: its message bytes (msg, or bytes
// [off, off+n) of the cached value st), and a suffix that sets
// metadata.resourceVersion (empty when msg already carries it).
type pbItem struct {
	msg    []byte
	st     cache.Stored
	off, n int
	suffix []byte
}

func (it pbItem) size() int { return it.n + len(it.suffix) }

// streamProtobufList writes the list as protobuf; with metadata, as a
// PartialObjectMetadataList (only from stored bytes: see streamable).
func (h *resourceHandler) streamProtobufList(w http.ResponseWriter, r *http.Request, opts cache.ListOptions, metadata bool) error {
	var items []pbItem
	total := 0
	var res cache.ListResult
	var err error
	if h.storedProtobuf {
		// The stored bytes are already this resource's protobuf encoding
		// without resourceVersion: pass them through and set the version by
		// appending a second metadata field holding only it, which protobuf
		// parsers merge into the first. No decode, no re-encode. Values the
		// cache keeps compressed are decompressed only while written; their
		// sizes come from the uncompressed head.
		var scratch []byte
		res, err = h.cache.ListStored(r.Context(), opts, func(st cache.Stored) error {
			off, n, err := envelopeObject(st.Head(), st.Len())
			if errors.Is(err, errEnvelopeCut) {
				var v []byte
				if v, err = st.Value(&scratch); err == nil {
					off, n, err = envelopeObject(v, len(v))
				}
			}
			it := pbItem{st: st, off: off, n: n, suffix: resourceVersionSuffix(st.ModRevision)}
			if err == nil && metadata {
				it, err = storedMetadata(it, st.Head(), func() ([]byte, error) { return st.Value(&scratch) })
			}
			if err != nil {
				return fmt.Errorf("stored %s at revision %d: %w", st.Key, st.ModRevision, err)
			}
			items = append(items, it)
			total += it.size()
			return nil
		})
	} else {
		type marshaler interface {
			Size() int
			MarshalToSizedBuffer([]byte) (int, error)
		}
		res, err = h.cache.List(r.Context(), opts, func(obj runtime.Object) error {
			m, ok := obj.(marshaler)
			if !ok {
				return fmt.Errorf("%T cannot be encoded as protobuf", obj)
			}
			buf := make([]byte, m.Size())
			if _, err := m.MarshalToSizedBuffer(buf); err != nil {
				return err
			}
			items = append(items, pbItem{msg: buf, n: len(buf)})
			total += len(buf)
			return nil
		})
	}
	if err != nil {
		return err
	}
	lm := metav1.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
	lmBytes, err := lm.Marshal()
	if err != nil {
		return err
	}
	// The list message: field 1 ListMeta, field 2 repeated items.
	listLen := 1 + varintLen(uint64(len(lmBytes))) + len(lmBytes)
	for _, it := range items {
		listLen += 1 + varintLen(uint64(it.size())) + it.size()
	}
	tm := runtime.TypeMeta{APIVersion: h.res.GroupVersion.String(), Kind: h.res.Kind + "List"}
	if metadata {
		tm = runtime.TypeMeta{APIVersion: partialListTypeMeta.APIVersion, Kind: partialListTypeMeta.Kind}
	}
	tmBytes, err := tm.Marshal()
	if err != nil {
		return err
	}
	var head bytes.Buffer
	head.Write(protobufMagic)
	// runtime.Unknown: field 1 TypeMeta, field 2 Raw (the list), then the
	// empty ContentEncoding and ContentType the serializer writes.
	writeField(&head, 1, tmBytes)
	writeTag(&head, 2, uint64(listLen))
	writeField(&head, 1, lmBytes)
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	w.WriteHeader(http.StatusOK)
	bw := h.s.listWriter(w)
	defer h.s.releaseListWriter(bw)
	_, _ = bw.Write(head.Bytes())
	var tag bytes.Buffer
	var scratch []byte
	for i, it := range items {
		msg := it.msg
		if msg == nil {
			v, err := it.st.Value(&scratch)
			if err == nil && len(v) < it.off+it.n {
				err = errors.New("shorter than its envelope says")
			}
			if err != nil {
				// The response is under way: all that is left is to cut
				// it short, which the client sees as a broken list.
				return fmt.Errorf("writing stored %s at revision %d: %w", it.st.Key, it.st.ModRevision, err)
			}
			msg = v[it.off : it.off+it.n]
		}
		tag.Reset()
		writeTag(&tag, 2, uint64(it.size()))
		_, _ = bw.Write(tag.Bytes())
		_, _ = bw.Write(msg)
		if _, err := bw.Write(it.suffix); err != nil {
			return nil // client gone
		}
		items[i] = pbItem{}
	}
	_, _ = bw.Write([]byte{0x1a, 0x00, 0x22, 0x00})
	return bw.Flush()
}

// storedMetadata narrows the list item it, the object message in its
// stored value, to the object's metadata (field 1). As encoded, fields are
// in ascending order, so the metadata leads the message: its extent is
// read from the uncompressed head when that holds the field's header, else
// found in the value (metadataField), where a metadata field that does not
// lead the message, or comes in parts, is copied out.
func storedMetadata(it pbItem, head []byte, value func() ([]byte, error)) (pbItem, error) {
	msg := head[min(it.off, len(head)):min(it.off+it.n, len(head))]
	if num, typ, k := protowire.ConsumeTag(msg); k > 0 && num == 1 && typ == protowire.BytesType {
		if l, m := protowire.ConsumeVarint(msg[k:]); m > 0 {
			if uint64(it.n-k-m) < l {
				return it, errors.New("malformed metadata field")
			}
			it.n = k + m + int(l)
			return it, nil
		}
	}
	v, err := value()
	if err == nil && len(v) < it.off+it.n {
		err = errors.New("shorter than its envelope says")
	}
	if err != nil {
		return it, err
	}
	m, err := metadataField(v[it.off : it.off+it.n])
	if err != nil {
		return it, err
	}
	if len(m) > 0 && &m[0] == &v[it.off] {
		it.n = len(m) // leads the message, in one part: the stored bytes serve
		return it, nil
	}
	it.msg, it.n = append([]byte(nil), m...), len(m)
	return it, nil
}

// unknownRaw returns the object message inside a stored value: the
// protobuf magic, then a runtime.Unknown whose field 2 holds it.
func unknownRaw(stored []byte) ([]byte, error) {
	off, n, err := envelopeObject(stored, len(stored))
	if err != nil {
		return nil, err
	}
	return stored[off : off+n], nil
}

// errEnvelopeCut is envelopeObject's answer when prefix ends before the
// object's field header: the caller needs more of the value.
var errEnvelopeCut = errors.New("envelope header beyond the prefix")

// envelopeObject finds the object message in a stored value of size
// total, of which prefix is the beginning: its offset and length.
func envelopeObject(prefix []byte, total int) (off, n int, err error) {
	if !bytes.HasPrefix(prefix, protobufMagic) {
		if len(prefix) < len(protobufMagic) && total > len(prefix) {
			return 0, 0, errEnvelopeCut
		}
		return 0, 0, errors.New("not a protobuf envelope")
	}
	pos := len(protobufMagic)
	for pos < total {
		if pos >= len(prefix) {
			return 0, 0, errEnvelopeCut
		}
		key, k := binary.Uvarint(prefix[pos:])
		if k <= 0 {
			if len(prefix) < total {
				return 0, 0, errEnvelopeCut
			}
			return 0, 0, errors.New("malformed envelope")
		}
		if key&7 != 2 {
			return 0, 0, errors.New("malformed envelope")
		}
		l, m := binary.Uvarint(prefix[pos+k:])
		if m <= 0 {
			if len(prefix) < total {
				return 0, 0, errEnvelopeCut
			}
			return 0, 0, errors.New("malformed envelope")
		}
		start := pos + k + m
		if uint64(total-start) < l {
			return 0, 0, errors.New("malformed envelope")
		}
		if key>>3 == 2 {
			return start, int(l), nil
		}
		pos = start + int(l)
	}
	return 0, 0, errors.New("envelope has no object")
}

// resourceVersionSuffix is field 1 (metadata) holding only field 6
// (resourceVersion) = rev.
func resourceVersionSuffix(rev int64) []byte {
	rv := strconv.FormatInt(rev, 10)
	var inner, out bytes.Buffer
	writeField(&inner, 6, []byte(rv))
	writeField(&out, 1, inner.Bytes())
	return out.Bytes()
}

// metadataIsField1 reports whether obj's protobuf message carries its
// ObjectMeta as field 1, which resourceVersionSuffix relies on. Every
// built-in kind does; a kind that did not would simply not get the fast
// path.
func metadataIsField1(obj runtime.Object) bool {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	f, ok := t.Elem().FieldByName("ObjectMeta")
	return ok && strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,1,")
}

// protobufMagic prefixes every Kubernetes protobuf message.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func writeVarint(b *bytes.Buffer, v uint64) {
	for v >= 0x80 {
		b.WriteByte(byte(v) | 0x80)
		v >>= 7
	}
	b.WriteByte(byte(v))
}

// writeTag writes a length-delimited field's key and length.
func writeTag(b *bytes.Buffer, field int, length uint64) {
	writeVarint(b, uint64(field<<3|2))
	writeVarint(b, length)
}

func writeField(b *bytes.Buffer, field int, data []byte) {
	writeTag(b, field, uint64(len(data)))
	b.Write(data)
}

// abortResponse ends the handler so net/http resets the stream instead of
// finishing a response that would look complete.
func abortResponse() { panic(http.ErrAbortHandler) }
