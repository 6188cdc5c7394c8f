package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// storedHead is how many leading bytes of a compressed value the cache
// keeps uncompressed: enough for an encoding's envelope header (the
// protobuf magic and runtime.Unknown's type and length), so that a reader
// that needs only that header does not decompress.
const storedHead = 128

// Stored is one object as the cache keeps it: key, revisions and stored
// bytes, which are kept compressed when Config.CompressValues is set.
type Stored struct {
	Key                         string
	ModRevision, CreateRevision int64

	raw        []byte
	compressed bool
}

// A compressed value is: uvarint(len(head)) | head | s2 block of the rest.

// compressor compresses values; its zero value is ready.
type compressor struct {
	// bufs holds working buffers: only the exactly sized result is kept.
	bufs sync.Pool
}

// compress returns value in the compressed layout, in one exactly-sized
// allocation.
func (cp *compressor) compress(value []byte) []byte {
	head, rest := value, []byte(nil)
	if len(value) > storedHead {
		head, rest = value[:storedHead], value[storedHead:]
	}
	bufp, _ := cp.bufs.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	defer cp.bufs.Put(bufp)
	if n := s2.MaxEncodedLen(len(rest)); cap(*bufp) < n {
		*bufp = make([]byte, n)
	}
	block := s2.Encode((*bufp)[:cap(*bufp)], rest)
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(len(head)))
	out := make([]byte, 0, h+len(head)+len(block))
	out = append(out, hdr[:h]...)
	out = append(out, head...)
	return append(out, block...)
}

var errBadCompressed = errors.New("cache: malformed compressed value")

// splitCompressed takes a compressed value apart.
func splitCompressed(raw []byte) (head, block []byte, err error) {
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)-k) {
		return nil, nil, errBadCompressed
	}
	return raw[k : k+int(n)], raw[k+int(n):], nil
}

// Len is the length of the stored value, -1 if the kept bytes are damaged.
func (s Stored) Len() int {
	if !s.compressed {
		return len(s.raw)
	}
	head, block, err := splitCompressed(s.raw)
	if err != nil {
		return -1
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return -1
	}
	return len(head) + n
}

// Head is a prefix of the stored value (all of it when it is not kept
// compressed, else up to its first 64 bytes), read without decompressing.
// It is shared: never modify it.
func (s Stored) Head() []byte {
	if !s.compressed {
		return s.raw
	}
	head, _, _ := splitCompressed(s.raw)
	return head
}

// Value is the stored value: the cache's own bytes when it keeps them
// uncompressed (shared: never modify them), else the value decompressed
// into *scratch (nil: a new buffer), which it grows as needed and which is
// overwritten by the next call with the same scratch.
func (s Stored) Value(scratch *[]byte) ([]byte, error) {
	if !s.compressed {
		return s.raw, nil
	}
	head, block, err := splitCompressed(s.raw)
	if err != nil {
		return nil, fmt.Errorf("%s at revision %d: %w", s.Key, s.ModRevision, err)
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%s at revision %d: %w", s.Key, s.ModRevision, err)
	}
	var buf []byte
	if scratch != nil {
		buf = *scratch
	}
	if cap(buf) < len(head)+n {
		buf = make([]byte, len(head)+n)
	}
	buf = buf[:len(head)+n]
	copy(buf, head)
	if _, err := s2.Decode(buf[len(head):], block); err != nil {
		return nil, fmt.Errorf("%s at revision %d: decompressing: %w", s.Key, s.ModRevision, err)
	}
	if scratch != nil {
		*scratch = buf
	}
	return buf, nil
}

// stored is e as a Stored.
func (c *Cache) stored(e *entry) Stored {
	return Stored{Key: e.key, ModRevision: e.rev, CreateRevision: e.createRev, raw: e.raw, compressed: c.cfg.CompressValues && !c.cfg.RetainObjects}
}

// keyValue is e with its value uncompressed, in memory of its own when
// the cache keeps values compressed.
func (c *Cache) keyValue(e *entry) (storage.KeyValue, error) {
	v, err := c.stored(e).Value(nil)
	if err != nil {
		return storage.KeyValue{}, internalError(err)
	}
	return storage.KeyValue{Key: e.key, Value: v, ModRevision: e.rev, CreateRevision: e.createRev}, nil
}
