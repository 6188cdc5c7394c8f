package cache

import (
	"sort"

	"github.com/google/btree"
)

// snapshot is an immutable view of the objects a read may return, as of
// rev: a lazily copied (copy-on-write) clone of the narrowest tree that
// holds them, restricted to a key range, with the window's undo overrides
// when rev is older than the cache. Iterating it needs no lock, so a list
// streams its items to a slow client without holding up the reflector and
// without copying the result.
type snapshot struct {
	tree      *btree.BTreeG[*entry] // nil: no candidates
	lo, hi    string                // key range [lo, hi); hi "" = unbounded
	overrides []override
	rev       int64
}

// snapshotLocked builds the snapshot for pred as of asOf (0 or the cache's
// revision: the current state). It fails with errTooOld when asOf is older
// than the window. Caller holds c.mu (read).
func (c *Cache) snapshotLocked(pred *predicate, asOf int64) (*snapshot, error) {
	s := &snapshot{lo: c.cfg.Prefix, rev: c.mu.rev}
	if asOf > 0 && asOf < c.mu.rev {
		if asOf < c.mu.win.startRev {
			return nil, errTooOld(asOf, c.mu.win.startRev)
		}
		s.overrides = c.mu.win.undo(asOf)
		s.rev = asOf
	}
	switch {
	case pred.hasName && (pred.namespace != "" || c.cfg.ClusterScoped):
		// One key (the single-object list/watch shape: a kubelet's own
		// Node, the legacy /watch/namespaces/ns/pods/name).
		s.lo = c.Key(pred.namespace, pred.name)
		s.hi = s.lo + "\x00"
	case pred.namespace != "":
		// Keys are prefix + namespace + "/" + name: a namespace is a
		// contiguous key range ('0' is the byte after '/').
		s.lo = c.cfg.Prefix + pred.namespace + "/"
		s.hi = c.cfg.Prefix + pred.namespace + "0"
	}
	src := c.mu.st.all
	if k, ok := pred.indexFor(c.cfg.IndexedFields, c.cfg.IndexedLabels); ok {
		src = c.mu.st.byValue[k] // nil when no object has the value
	}
	if src != nil {
		c.cloneMu.Lock()
		s.tree = src.Clone()
		c.cloneMu.Unlock()
	}
	return s, nil
}

// ascend calls fn, in key order, for every object of the snapshot with a
// key >= start (within its range), until fn returns false. Objects come
// from the tree unless an override replaces (or removes) them. Selection
// is the caller's job: an index tree or an override may yield objects the
// predicate rejects (an override's old version may have lived on another
// node, say), and that is how old versions on this node come back.
func (s *snapshot) ascend(start string, fn func(*entry) bool) {
	from := max(s.lo, start)
	inRange := func(k string) bool { return s.hi == "" || k < s.hi }
	ov := s.overrides
	i := sort.Search(len(ov), func(i int) bool { return ov[i].key >= from })
	stopped := false
	visit := func(t *entry) bool {
		for i < len(ov) && ov[i].key < t.key {
			if e := ov[i].e; e != nil && !fn(e) {
				stopped = true
				return false
			}
			i++
		}
		if i < len(ov) && ov[i].key == t.key {
			e := ov[i].e
			i++
			if e == nil {
				return true // did not exist yet
			}
			t = e
		}
		if !fn(t) {
			stopped = true
			return false
		}
		return true
	}
	if s.tree != nil {
		if s.hi == "" {
			s.tree.AscendGreaterOrEqual(&entry{key: from}, visit)
		} else {
			s.tree.AscendRange(&entry{key: from}, &entry{key: s.hi}, visit)
		}
	}
	for ; !stopped && i < len(ov) && inRange(ov[i].key); i++ {
		if e := ov[i].e; e != nil && !fn(e) {
			return
		}
	}
}
