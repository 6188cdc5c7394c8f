package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
	dict       *s2.Dict // the compressor's, for values compressed with it
}

// A compressed value is
//
//	uvarint(len(head)<<1 | d) | head | s2 block of the rest
//
// where d is 1 when the block was encoded against the compressor's
// dictionary.
//
// The values of one resource share most of their bytes: field tags,
// managedFields' keys, in every pod of a Deployment its template. S2 finds
// none of that in one value on its own; against a dictionary of the
// resource's values it does. A density pod (3,253 bytes of protobuf)
// compresses to 1,894 bytes alone and to ~470 against a dictionary of
// four pods; its Event from 681 to 551 and ~295. Encode and decode are
// faster too (fewer literals to copy).
//
// The dictionary is made once, from every dictEvery-th of the first
// values long enough to be samples, and never changes: values compressed
// before it stay plain, and a cache of fewer values never makes one. The
// samples are spread so that they see objects in their different states:
// against four pods as created, a running pod keeps 917 bytes; against
// two created and two running, 472.
const (
	dictEvery       = 128
	dictSamples     = 8
	dictMaxBytes    = 32 << 10
	dictSampleBytes = 64 // the least a value has past its head to be a sample
)

// compressor compresses values; its zero value is ready.
type compressor struct {
	// bufs holds working buffers: only the exactly sized result is kept.
	bufs sync.Pool
	dict atomic.Pointer[s2.Dict]
	// learned is set once the dictionary is made (or would be nil).
	learned atomic.Bool
	// seen counts the values long enough to be samples until then.
	seen atomic.Int64

	mu       sync.Mutex // guards the samples
	samples  []byte
	nsamples int
}

// compress returns value in the compressed layout, in one exactly-sized
// allocation.
func (cp *compressor) compress(value []byte) []byte {
	head, rest := value, []byte(nil)
	if len(value) > storedHead {
		head, rest = value[:storedHead], value[storedHead:]
	}
	dict := cp.dictionary(rest)
	bufp, _ := cp.bufs.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	defer cp.bufs.Put(bufp)
	if n := s2.MaxEncodedLen(len(rest)); cap(*bufp) < n {
		*bufp = make([]byte, n)
	}
	var block []byte
	lenAndDict := uint64(len(head)) << 1
	if dict != nil {
		block = dict.Encode((*bufp)[:cap(*bufp)], rest)
		lenAndDict |= 1
	} else {
		block = s2.Encode((*bufp)[:cap(*bufp)], rest)
	}
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], lenAndDict)
	out := make([]byte, 0, h+len(head)+len(block))
	out = append(out, hdr[:h]...)
	out = append(out, head...)
	return append(out, block...)
}

// dictionary returns the dictionary to compress rest (a value past its
// head) with, nil while there is none; until there is, rest may become
// one of its samples.
func (cp *compressor) dictionary(rest []byte) *s2.Dict {
	if cp.learned.Load() || len(rest) < dictSampleBytes {
		return cp.dict.Load()
	}
	if cp.seen.Add(1)%dictEvery != 0 {
		return nil
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.learned.Load() {
		return cp.dict.Load()
	}
	cp.samples = append(cp.samples, rest[:min(len(rest), dictMaxBytes-len(cp.samples))]...)
	cp.nsamples++
	if cp.nsamples < dictSamples && len(cp.samples) < dictMaxBytes {
		return nil
	}
	d := s2.MakeDict(cp.samples, nil)
	cp.samples = nil
	cp.dict.Store(d)
	cp.learned.Store(true)
	return d
}

var (
	errBadCompressed = errors.New("cache: malformed compressed value")
	errNoDict        = errors.New("cache: value compressed with a dictionary, but none given")
)

// splitCompressed takes a compressed value apart.
func splitCompressed(raw []byte) (head, block []byte, withDict bool, err error) {
	hd, k := binary.Uvarint(raw)
	n := hd >> 1
	if k <= 0 || n > uint64(len(raw)-k) {
		return nil, nil, false, errBadCompressed
	}
	return raw[k : k+int(n)], raw[k+int(n):], hd&1 == 1, nil
}

// Len is the length of the stored value, -1 if the kept bytes are damaged.
func (s Stored) Len() int {
	if !s.compressed {
		return len(s.raw)
	}
	head, block, _, err := splitCompressed(s.raw)
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
// compressed, else up to its first storedHead bytes), read without
// decompressing. It is shared: never modify it.
func (s Stored) Head() []byte {
	if !s.compressed {
		return s.raw
	}
	head, _, _, _ := splitCompressed(s.raw)
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
	head, block, withDict, err := splitCompressed(s.raw)
	if err == nil && withDict && s.dict == nil {
		err = errNoDict
	}
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
	decode := s2.Decode
	if withDict {
		decode = s.dict.Decode
	}
	if _, err := decode(buf[len(head):], block); err != nil {
		return nil, fmt.Errorf("%s at revision %d: decompressing: %w", s.Key, s.ModRevision, err)
	}
	if scratch != nil {
		*scratch = buf
	}
	return buf, nil
}

// stored is e as a Stored.
func (c *Cache) stored(e *entry) Stored {
	return Stored{Key: e.key, ModRevision: e.rev, CreateRevision: e.createRev, raw: e.raw,
		compressed: c.cfg.CompressValues && !c.cfg.RetainObjects, dict: c.compressor.dict.Load()}
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
