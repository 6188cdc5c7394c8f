package embedded

import (
	"hash/maphash"
	"unsafe"
)

// keyTable holds one group of the key index (keyindex.go): key -> keyMeta
// for every live key, without a Go pointer per key.
//
// Why not a map[string]keyMeta: at a million objects that map is a million
// key strings, each its own allocation referenced from a map slot, and
// every GC cycle marks all of them. In the API server at 1M pods they were
// ~17% of the heap's objects, and under a memory limit (frequent cycles)
// mark work is what writes pay for. Here the slots and the key bytes are
// pointer-free slices the GC neither scans nor marks per key.
//
// Open addressing with linear probing over a power-of-two slot array; key
// bytes are appended to 1 MiB chunks and referenced by position. Deleting
// leaves a tombstone and garbage in the chunks; the table is rebuilt when
// live keys and tombstones fill three quarters of the slots, which drops
// the tombstones, and the garbage too once it is a quarter of the bytes.
// Keys too long for a reference (64 KiB and more; Kubernetes keys are far
// shorter) live in an ordinary map.
//
// Not safe for concurrent use; keyIndex says who may use it when.
type keyTable struct {
	seed   maphash.Seed
	slots  []keySlot
	live   int // keys in slots
	tombs  int // deleted slots
	chunks [][]byte
	// garbage is the bytes of deleted keys still in chunks.
	garbage int
	// long holds keys of maxRefLen bytes or more.
	long map[string]keyMeta
	// gen counts rebuilds (eachFrom).
	gen uint64
}

// keySlot is one slot. hash is slotEmpty, slotDeleted, or the key's hash
// (never below 2). ref locates the key: chunk<<40 | offset<<16 | length.
type keySlot struct {
	hash        uint64
	ref         uint64
	mod, create int64
}

const (
	slotEmpty   = 0
	slotDeleted = 1

	keyChunkSize = 1 << 20
	maxRefLen    = 1<<16 - 1
	minSlots     = 16
)

func newKeyTable() *keyTable {
	return &keyTable{seed: maphash.MakeSeed(), slots: make([]keySlot, minSlots), long: map[string]keyMeta{}}
}

// Len is the number of keys.
func (t *keyTable) Len() int { return t.live + len(t.long) }

func (t *keyTable) Get(key string) (keyMeta, bool) {
	if len(key) >= maxRefLen {
		m, ok := t.long[key]
		return m, ok
	}
	i, found := t.find(key, t.hash(key))
	if !found {
		return keyMeta{}, false
	}
	s := &t.slots[i]
	return keyMeta{mod: s.mod, create: s.create}, true
}

// Set keeps no reference to key unless it is maxRefLen bytes or longer
// (then it is a key of the long map): setBytes relies on that.
func (t *keyTable) Set(key string, m keyMeta) {
	if len(key) >= maxRefLen {
		t.long[key] = m
		return
	}
	h := t.hash(key)
	i, found := t.find(key, h)
	if found {
		t.slots[i].mod, t.slots[i].create = m.mod, m.create
		return
	}
	if (t.live+t.tombs+1)*4 > len(t.slots)*3 {
		t.rebuild()
		i, _ = t.find(key, h)
	}
	if t.slots[i].hash == slotDeleted {
		t.tombs--
	}
	t.slots[i] = keySlot{hash: h, ref: t.store(key), mod: m.mod, create: m.create}
	t.live++
}

// setBytes is Set for a key in a buffer the caller reuses (an iterator's
// key at Open, a million of them): the table copies key bytes into its
// chunks and keeps no reference to key, so the string need not be its own
// allocation. Only a key too long for a reference is kept as a string, and
// that one is copied first.
func (t *keyTable) setBytes(key []byte, m keyMeta) {
	if len(key) >= maxRefLen {
		t.Set(string(key), m)
		return
	}
	t.Set(unsafe.String(unsafe.SliceData(key), len(key)), m)
}

func (t *keyTable) Delete(key string) {
	if len(key) >= maxRefLen {
		delete(t.long, key)
		return
	}
	if i, found := t.find(key, t.hash(key)); found {
		t.slots[i] = keySlot{hash: slotDeleted}
		t.live--
		t.tombs++
		t.garbage += len(key)
	}
}

// each calls f for every key, in no particular order. key is only valid
// during the call.
func (t *keyTable) each(f func(key []byte, m keyMeta)) {
	t.eachFrom(0, len(t.slots), f)
}

// eachFrom calls f for the keys in slots [start, start+n), and once the
// slots run out for the long keys too; it returns where to go on from and
// whether there is more. Between calls the keys may change: a key set or
// deleted meanwhile may be seen in either state or not at all, and if the
// table is rebuilt (gen changes) the slots move and a scan must start over.
func (t *keyTable) eachFrom(start, n int, f func(key []byte, m keyMeta)) (int, bool) {
	end := min(start+n, len(t.slots))
	for _, s := range t.slots[min(start, end):end] {
		if s.hash > slotDeleted {
			f(keyAt(t.chunks, s.ref), keyMeta{mod: s.mod, create: s.create})
		}
	}
	if end < len(t.slots) {
		return end, true
	}
	for k, m := range t.long {
		f([]byte(k), m)
	}
	return end, false
}

func (t *keyTable) hash(key string) uint64 {
	return max(maphash.String(t.seed, key), slotDeleted+1)
}

// find returns the slot holding key, or else the slot to insert it in (the
// first tombstone on its probe path, or the empty slot that ends it).
func (t *keyTable) find(key string, h uint64) (int, bool) {
	mask := uint64(len(t.slots) - 1)
	insert := -1
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.hash == slotEmpty:
			if insert < 0 {
				insert = int(i)
			}
			return insert, false
		case s.hash == slotDeleted:
			if insert < 0 {
				insert = int(i)
			}
		case s.hash == h && t.key(s.ref) == key:
			return int(i), true
		}
	}
}

// key returns the key bytes ref points at; comparing the conversion with a
// string does not allocate.
func (t *keyTable) key(ref uint64) string {
	return string(keyAt(t.chunks, ref))
}

func keyAt(chunks [][]byte, ref uint64) []byte {
	c := chunks[ref>>40]
	off, n := (ref>>16)&(1<<24-1), ref&maxRefLen
	return c[off : off+n]
}

// store appends key to the chunks and returns its reference.
func (t *keyTable) store(key string) uint64 {
	var ref uint64
	t.chunks, ref = appendKey(t.chunks, key)
	return ref
}

func appendKey[K string | []byte](chunks [][]byte, key K) ([][]byte, uint64) {
	last := len(chunks) - 1
	if last < 0 || len(chunks[last])+len(key) > keyChunkSize {
		chunks = append(chunks, make([]byte, 0, keyChunkSize))
		last++
	}
	off := len(chunks[last])
	chunks[last] = append(chunks[last], key...)
	return chunks, uint64(last)<<40 | uint64(off)<<16 | uint64(len(key))
}

// rebuild moves the live keys into a fresh slot array (twice as large if
// they fill half of the current one), dropping tombstones. The key bytes
// move to fresh chunks only when a quarter or more of them are garbage, so
// growing a table that only gains keys (loading it at Open) copies slots,
// not keys.
func (t *keyTable) rebuild() {
	n := len(t.slots)
	if (t.live+1)*2 > n {
		n *= 2
	}
	stored := 0
	for _, c := range t.chunks {
		stored += len(c)
	}
	compact := t.garbage*4 >= stored && t.garbage > 0
	slots := make([]keySlot, n)
	var chunks [][]byte
	mask := uint64(n - 1)
	for _, s := range t.slots {
		if s.hash <= slotDeleted {
			continue
		}
		if compact {
			chunks, s.ref = appendKey(chunks, keyAt(t.chunks, s.ref))
		}
		i := s.hash & mask
		for slots[i].hash != slotEmpty {
			i = (i + 1) & mask
		}
		slots[i] = s
	}
	t.slots, t.tombs = slots, 0
	t.gen++
	if compact {
		t.chunks, t.garbage = chunks, 0
	}
}
