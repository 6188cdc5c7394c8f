package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/s2"
)

// Images: the cache's state written at a clean stop (SaveImage) and read
// back by the next start in place of listing the store.
//
// At a million objects a start spends most of its time reading every value
// from the store and decoding it only to index its labels and fields
// (docs/bench/scale.md). An image holds what the cache keeps of each object
// — key, revisions, labels and fields, stored (compressed) bytes — and the
// compression dictionary, as of the revision R the cache had reached, so
// the next start reads one file instead.
//
// An image is the prefix's state at R: the cache uses it as it would a
// list at R, then follows the store from R (prefill, watch), which brings
// every change made after the image. So it is only taken when the store
// can still replay from R (compacted revision <= R <= current revision),
// only if Config.ImageTag matches (another binary may index differently),
// and only once: the file is removed as it is read, so a start after a
// crash (which wrote none) lists the store. A damaged, truncated or foreign
// file fails its checksum or its header and is ignored the same way. The
// file lives where its store does (the API server keeps images only
// beside its embedded store), so it cannot meet another store's history.

const imageMagic = "myriad watch cache image\x00v1\x00"

var imageCRC = crc32.MakeTable(crc32.Castagnoli)

// imageWriteBuffer is how much SaveImage collects before each write.
const imageWriteBuffer = 1 << 20

// ErrNoImage reports that SaveImage wrote nothing: the cache has no
// Config.ImageFile, keeps decoded objects (RetainObjects), or never became
// ready.
var ErrNoImage = errors.New("cache: no image to save")

// SaveImage writes the cache's state to Config.ImageFile, for the next
// start with the same file and tag to read instead of listing the store.
// It must be called after Stop, when the state no longer moves. It writes to a
// temporary file renamed into place, without fsync: a file lost or cut
// short by a crash fails its checksum and the next start lists the store.
func (c *Cache) SaveImage(ctx context.Context) error {
	if c.cfg.ImageFile == "" || c.cfg.RetainObjects {
		return ErrNoImage
	}
	c.life.Lock()
	stopped := c.life.stopped
	c.life.Unlock()
	if !stopped {
		return errors.New("cache: SaveImage before Stop")
	}
	select {
	case <-c.ready:
	default:
		return ErrNoImage
	}
	start := time.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	st, rev := c.mu.st, c.mu.rev
	if rev <= 0 {
		return ErrNoImage
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.cfg.ImageFile), filepath.Base(c.cfg.ImageFile)+".tmp*")
	if err != nil {
		return fmt.Errorf("cache image %s: %w", c.cfg.ImageFile, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	n, err := c.writeImage(ctx, tmp, st, rev)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.cfg.ImageFile)
	}
	if err != nil {
		return fmt.Errorf("cache image %s: %w", c.cfg.ImageFile, err)
	}
	c.logTimed(start, "saved the cache image", "objects", st.all.Len(), "rev", rev, "bytes", n)
	return nil
}

// ImageFile is where the cache keeps its image ("": it keeps none).
func (c *Cache) ImageFile() string {
	if c.cfg.RetainObjects {
		return ""
	}
	return c.cfg.ImageFile
}

// imageWriter appends an image's fields to w, keeping the checksum of
// everything written; the first error sticks.
type imageWriter struct {
	w   io.Writer
	crc uint32
	n   int64
	buf []byte
	err error
}

func (iw *imageWriter) flushIfFull() {
	if len(iw.buf) < imageWriteBuffer || iw.err != nil {
		return
	}
	iw.flush()
}

func (iw *imageWriter) flush() {
	if iw.err != nil {
		return
	}
	iw.crc = crc32.Update(iw.crc, imageCRC, iw.buf)
	_, iw.err = iw.w.Write(iw.buf)
	iw.n += int64(len(iw.buf))
	iw.buf = iw.buf[:0]
}

func (iw *imageWriter) uvarint(v uint64) { iw.buf = binary.AppendUvarint(iw.buf, v) }
func (iw *imageWriter) varint(v int64)   { iw.buf = binary.AppendVarint(iw.buf, v) }
func (iw *imageWriter) bytes(b []byte) {
	iw.uvarint(uint64(len(b)))
	iw.buf = append(iw.buf, b...)
}
func (iw *imageWriter) string(s string) {
	iw.uvarint(uint64(len(s)))
	iw.buf = append(iw.buf, s...)
}

// writeImage writes st at rev to w and returns the bytes written:
//
//	magic | tag | prefix | compressed | rev | count | dictionary
//	count × (key below prefix | rev | create rev | size | nlabels | attrs | raw)
//	CRC-32C of all that, 4 bytes little-endian
//
// Strings and byte fields are a uvarint length and the bytes; numbers
// varints. The dictionary is s2.Dict.Bytes, empty when there is none.
func (c *Cache) writeImage(ctx context.Context, w io.Writer, st *state, rev int64) (int64, error) {
	iw := &imageWriter{w: w, buf: make([]byte, 0, imageWriteBuffer+64<<10)}
	iw.buf = append(iw.buf, imageMagic...)
	iw.string(c.cfg.ImageTag)
	iw.string(c.cfg.Prefix)
	iw.uvarint(boolByte(c.cfg.CompressValues))
	iw.varint(rev)
	iw.uvarint(uint64(st.all.Len()))
	var dict []byte
	if d := c.compressor.dict.Load(); d != nil && c.cfg.CompressValues {
		dict = d.Bytes()
	}
	iw.bytes(dict)
	var bad error
	st.all.Ascend(func(e *entry) bool {
		if err := undecodableErr(e); err != nil {
			bad = fmt.Errorf("%s does not decode", e.key)
			return false
		}
		if ctx.Err() != nil {
			bad = ctx.Err()
			return false
		}
		iw.string(e.key[len(c.cfg.Prefix):])
		iw.varint(e.rev)
		iw.varint(e.createRev)
		iw.uvarint(uint64(e.size))
		iw.uvarint(uint64(e.nlabels))
		iw.string(e.attrs)
		iw.bytes(e.raw)
		iw.flushIfFull()
		return iw.err == nil
	})
	if bad != nil {
		return 0, bad
	}
	iw.flush()
	if iw.err != nil {
		return 0, iw.err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, iw.crc))
	return iw.n + 4, err
}

func boolByte(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// loadImage reads and removes Config.ImageFile and returns its state and
// revision, or ok false (logged, unless there is no file) when the start
// must list the store instead.
func (c *Cache) loadImage(ctx context.Context) (st *state, rev int64, ok bool) {
	if c.cfg.ImageFile == "" || c.cfg.RetainObjects {
		return nil, 0, false
	}
	start := time.Now()
	data, err := os.ReadFile(c.cfg.ImageFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false
	}
	// Read once: a crash before the next clean stop must not find it.
	if rerr := os.Remove(c.cfg.ImageFile); rerr != nil && err == nil {
		err = rerr
	}
	var img *image
	if err == nil {
		img, err = c.parseImage(data)
	}
	if err == nil {
		err = c.imageUsable(ctx, img.rev)
	}
	if err != nil {
		c.cfg.Logger.Warn("not using the cache image; listing the store", "file", c.cfg.ImageFile, "err", err)
		return nil, 0, false
	}
	c.metrics.fromImage.Inc()
	if img.dict != nil {
		c.compressor.dict.Store(img.dict)
		c.compressor.learned.Store(true)
	}
	c.logTimed(start, "filled from the cache image", "objects", img.st.all.Len(), "rev", img.rev, "bytes", len(data))
	return img.st, img.rev, true
}

// logTimed logs msg with how long since start it took: at info when that
// was long enough to matter to a restart, else at debug (a server has
// dozens of caches, most of them small).
func (c *Cache) logTimed(start time.Time, msg string, args ...any) {
	took := time.Since(start)
	level := slog.LevelDebug
	if took >= 100*time.Millisecond {
		level = slog.LevelInfo
	}
	c.cfg.Logger.Log(context.Background(), level, msg, append(args, "took", took.Round(time.Millisecond))...)
}

// imageUsable says why the store cannot replay its history from rev, if
// it cannot: then an image at rev is not a state the cache can follow.
func (c *Cache) imageUsable(ctx context.Context, rev int64) error {
	cur, err := c.cfg.Store.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	comp, err := c.cfg.Store.CompactedRevision(ctx)
	if err != nil {
		return err
	}
	if rev > cur {
		return fmt.Errorf("image at revision %d is newer than the store (%d)", rev, cur)
	}
	if rev < comp {
		return fmt.Errorf("image at revision %d is older than the store's history (compacted at %d)", rev, comp)
	}
	return nil
}

type image struct {
	st   *state
	rev  int64
	dict *s2.Dict
}

var errImageFormat = errors.New("malformed image")

// parseImage checks data's checksum and header and builds its state. Every
// entry gets its own allocations: holding on to data would keep the whole
// file alive as long as any object in it is unchanged.
func (c *Cache) parseImage(data []byte) (*image, error) {
	if len(data) < len(imageMagic)+4 || !bytes.HasPrefix(data, []byte(imageMagic)) {
		return nil, errImageFormat
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, imageCRC) != sum {
		return nil, errors.New("image checksum mismatch")
	}
	r := imageReader{b: body[len(imageMagic):]}
	tag, prefix, compressed := r.string(), r.string(), r.uvarint()
	rev, count, dict := r.varint(), r.uvarint(), r.bytes()
	if r.err != nil {
		return nil, r.err
	}
	switch {
	case tag != c.cfg.ImageTag:
		return nil, fmt.Errorf("image made by %q, this is %q", tag, c.cfg.ImageTag)
	case prefix != c.cfg.Prefix:
		return nil, fmt.Errorf("image of %q", prefix)
	case (compressed == 1) != c.cfg.CompressValues:
		return nil, errors.New("image's values are kept otherwise")
	case rev <= 0:
		return nil, errImageFormat
	}
	img := &image{rev: rev, st: newState(c.cfg.Prefix, c.cfg.IndexedFields, c.cfg.IndexedLabels)}
	if len(dict) > 0 {
		if img.dict = s2.NewDict(dict); img.dict == nil {
			return nil, errors.New("image's dictionary does not parse")
		}
	}
	for range count {
		key, erev, crev, size, nlabels, attrs, raw := r.bytes(), r.varint(), r.varint(), r.uvarint(), r.uvarint(), r.bytes(), r.bytes()
		if r.err != nil {
			return nil, r.err
		}
		if erev <= 0 || erev > rev || crev <= 0 || crev > erev || size > 1<<31-1 || !validAttrs(attrs, nlabels) {
			return nil, errImageFormat
		}
		// The key and the attributes share one allocation: an entry
		// replaces both at once.
		both := string(c.cfg.Prefix) + string(key) + string(attrs)
		e := &entry{
			rev: erev, createRev: crev, size: int32(size), nlabels: int32(nlabels),
			attrs: both[len(both)-len(attrs):],
			raw:   bytes.Clone(raw),
		}
		e.setKey(c.cfg.Prefix, both[:len(both)-len(attrs)])
		if img.st.put(e) != nil {
			return nil, fmt.Errorf("image holds %s twice", e.key)
		}
	}
	if len(r.b) != 0 {
		return nil, errImageFormat
	}
	return img, nil
}

// validAttrs says whether attrs is a run of length-prefixed pairs (the
// layout setAttrs writes, which lookups read unchecked) of which the
// labels take the first nlabels bytes.
func validAttrs(attrs []byte, nlabels uint64) bool {
	boundary := nlabels == 0
	for off := 0; off < len(attrs); {
		for range 2 { // key, value
			n, w := binary.Uvarint(attrs[off:])
			if w <= 0 || n > uint64(len(attrs)-off-w) {
				return false
			}
			off += w + int(n)
		}
		boundary = boundary || uint64(off) == nlabels
	}
	return boundary
}

// imageReader takes an image's fields apart; the first error sticks and
// every later read returns zero values.
type imageReader struct {
	b   []byte
	err error
}

func (r *imageReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errImageFormat
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *imageReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errImageFormat
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns the next length-prefixed field, aliasing the image.
func (r *imageReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errImageFormat
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *imageReader) string() string { return string(r.bytes()) }
