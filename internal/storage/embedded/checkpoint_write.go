package embedded

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// indexRun is one piece of a copy of the key index: key i is
// arena[offs[i]:offs[i+1]] with metas[i], and order lists the keys sorted.
// Each piece has arrays of its own (a few hundred KB): one copy of a
// million keys in arrays grown by doubling moved tens of MB at a time, in
// copies the runtime cannot preempt, and updates' p99 in the seconds that
// took was 20-76 ms (docs/bench/storage.md, "Checkpoints in short
// slices").
type indexRun struct {
	arena []byte
	offs  []int
	metas []keyMeta
	order []int
}

func newIndexRun() *indexRun { return &indexRun{offs: []int{0}} }

func (r *indexRun) add(key []byte, m keyMeta) {
	r.arena = append(r.arena, key...)
	r.offs = append(r.offs, len(r.arena))
	r.metas = append(r.metas, m)
	r.order = append(r.order, len(r.metas)-1)
}

func (r *indexRun) key(i int) []byte { return r.arena[r.offs[i]:r.offs[i+1]] }

func (r *indexRun) sort(p *slicePacer) {
	slices.SortFunc(r.order, func(a, b int) int {
		p.step()
		return bytes.Compare(r.key(a), r.key(b))
	})
}

// collectIndex copies every key in groups, a piece of checkpointSlots slots
// at a time under the index's read lock, and sorts each piece into a run
// (paced by p); ingestCheckpoint merges the runs.
func (s *Store) collectIndex(ctx context.Context, groups []*keyTable, p *slicePacer) ([]*indexRun, error) {
	var runs []*indexRun
	for _, t := range groups {
		s.index.mu.RLock()
		gen := t.gen
		s.index.mu.RUnlock()
		for next, more := 0, true; more; {
			r := newIndexRun()
			s.index.mu.RLock()
			rebuilt := t.gen != gen
			if !rebuilt {
				next, more = t.eachFrom(next, checkpointSlots, r.add)
			}
			s.index.mu.RUnlock()
			if rebuilt {
				// Its slots moved between pieces: the next checkpoint
				// starts over.
				return nil, fmt.Errorf("embedded: the key index was rebuilt while it was read")
			}
			if len(r.metas) == 0 {
				continue
			}
			r.sort(p)
			runs = append(runs, r)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	return runs, nil
}

// mergeRuns calls f for every key of runs in key order.
func mergeRuns(runs []*indexRun, f func(key []byte, m keyMeta) error) error {
	type cursor struct {
		run *indexRun
		at  int // index into run.order
	}
	var h []cursor // a min-heap on the cursors' current keys
	keyOf := func(c cursor) []byte { return c.run.key(c.run.order[c.at]) }
	less := func(a, b cursor) bool { return bytes.Compare(keyOf(a), keyOf(b)) < 0 }
	down := func(i int) {
		for {
			l, smallest := 2*i+1, i
			if l < len(h) && less(h[l], h[smallest]) {
				smallest = l
			}
			if r := l + 1; r < len(h) && less(h[r], h[smallest]) {
				smallest = r
			}
			if smallest == i {
				return
			}
			h[i], h[smallest] = h[smallest], h[i]
			i = smallest
		}
	}
	for _, r := range runs {
		if len(r.order) > 0 {
			h = append(h, cursor{run: r})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		c := h[0]
		if err := f(keyOf(c), c.run.metas[c.run.order[c.at]]); err != nil {
			return err
		}
		if h[0].at++; h[0].at == len(c.run.order) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	return nil
}

// ingestCheckpoint writes the checkpoint records of runs, at revision rev, to
// an sstable and ingests it: they bypass the WAL and the memtable (written
// through batches they cost updates at a million objects a p99 of 5 ms
// instead of 2.5 for the run they fell in) and, overlapping nothing, go
// straight to the bottom of the LSM. Writing the table is paced by p.
func (s *Store) ingestCheckpoint(ctx context.Context, rev int64, runs []*indexRun, p *slicePacer) error {
	path := filepath.Join(s.opts.Dir, fmt.Sprintf("checkpoint-%d%s", rev, checkpointTmpSuffix))
	f, err := s.opts.FS.Create(path, "")
	if err != nil {
		return err
	}
	// Written back as it goes, as Pebble's own tables are, rather than in
	// one fsync at the end that the WAL's fsyncs would queue behind.
	f = vfs.NewSyncingFile(f, vfs.SyncingFileOptions{BytesPerSync: s.pebbleOpts.BytesPerSync})
	defer func() { _ = s.opts.FS.Remove(path) }()
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.pebbleOpts.MakeWriterOptions(len(s.pebbleOpts.Levels)-1, s.db.TableFormat()))
	n := 0
	err = mergeRuns(runs, func(key []byte, m keyMeta) error {
		p.step()
		if err := w.Set(checkpointRecord(rev, key, m)); err != nil {
			return err
		}
		if n++; n%checkpointSlots == 0 {
			return ctx.Err()
		}
		return nil
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return s.db.Ingest(ctx, []string{path})
}

// slicePacer paces a long job that nothing waits for (a checkpoint) in
// slices of about sliceWork: after each it sleeps yield times as long as
// the slice took. The slices must be short. On two cores a job that runs
// for milliseconds at a time leaves the writer, the syncer and the callers
// they wake one core between them (Go preempts a goroutine only after
// 10 ms, and runtime.Gosched hands the core back to the same job): paced
// after every 4096 keys, ~4 ms of work, a checkpoint of a million keys
// raised updates' p99 from ~1.3 to ~5 ms for as long as it ran, whatever
// the yield (docs/bench/storage.md, "Checkpoints in short slices"). A
// pause is capped at maxCompactionYield, so a slice that ran long because
// the job was descheduled does not hold up Close.
type slicePacer struct {
	yield float64 // Options.CompactionYield; no pauses if not positive
	n     int
	start time.Time // of the current slice
	sleep func(time.Duration)
}

// sliceWork is the work a slicePacer does between pauses.
const sliceWork = 250 * time.Microsecond

func newSlicePacer(yield float64) *slicePacer {
	return &slicePacer{yield: yield, start: time.Now(), sleep: time.Sleep}
}

// step counts one step of the job (a key compared or written), pausing at
// the end of a slice. It reads the clock every 64 steps.
func (p *slicePacer) step() {
	if p.n++; p.yield <= 0 || p.n%64 != 0 {
		return
	}
	if work := time.Since(p.start); work >= sliceWork {
		p.sleep(min(time.Duration(p.yield*float64(work)), maxCompactionYield))
		p.start = time.Now()
	}
}

// checkpointTmpSuffix ends the name of the sstable a checkpoint is written
// to before Pebble ingests it.
const checkpointTmpSuffix = ".sst.tmp"

// removeCheckpointTmp removes the sstables of checkpoints that a crash
// interrupted before they were ingested: nothing reads them, and each may
// be as large as the key index.
func removeCheckpointTmp(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasPrefix(name, "checkpoint-") && strings.HasSuffix(name, checkpointTmpSuffix) {
			if err := fs.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}
