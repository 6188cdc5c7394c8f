package embedded

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Compaction pacing: on a small machine a Pebble compaction takes a whole
// core while it runs, and writes queued behind it in the writer, the syncer
// and their callers wait for the other one. At a million objects that is
// what set the store's p99 apart from the 10k store's: with L0 compactions
// held off for a run, updates at 1M had the 10k store's p99
// (docs/bench/storage.md, "Compaction pacing"). So while compactions keep
// up, each one yields: after every block it writes, it sleeps for a
// multiple of the time it took to produce the block. Compactions then take
// longer but interfere less; flushes (which free the memtables writes go
// to) are never paced, and pacing stops as soon as L0 — the one place
// Pebble stalls writes for compaction debt — is deep (see paceCompactions).

// The categories Pebble creates compaction output (sstables and blob
// files) with, and the blob files that rewrites of mostly-garbage ones
// produce; flushes have their own.
const (
	compactionWriteCategory  vfs.DiskWriteCategory = "pebble-compaction"
	blobRewriteWriteCategory vfs.DiskWriteCategory = "pebble-blob-file-rewrite"
)

// maxCompactionYield caps one sleep, so a block that took long to produce
// (the compaction was descheduled) does not stall the compaction for long.
const maxCompactionYield = 20 * time.Millisecond

// pacer decides how long a compaction sleeps after writing a block.
type pacer struct {
	yield  float64     // sleep this many times the time a block took
	active atomic.Bool // L0 is shallow: pace (paceCompactions sets it)
	slept  atomic.Int64
	now    func() time.Time
	sleep  func(time.Duration)
}

func newPacer(yield float64) *pacer {
	return &pacer{yield: yield, now: time.Now, sleep: time.Sleep}
}

// pacedFS wraps the FS Pebble writes with, pacing compaction output files.
type pacedFS struct {
	vfs.FS
	pacer *pacer
}

func (fs pacedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || (category != compactionWriteCategory && category != blobRewriteWriteCategory) {
		return f, err
	}
	return &pacedFile{File: f, pacer: fs.pacer, last: fs.pacer.now()}, nil
}

// pacedFile is one compaction output file. Pebble writes it from one
// goroutine at a time.
type pacedFile struct {
	vfs.File
	pacer *pacer
	last  time.Time // when the previous Write returned (or the file was created)
}

func (f *pacedFile) Write(b []byte) (int, error) {
	p := f.pacer
	work := p.now().Sub(f.last)
	n, err := f.File.Write(b)
	if err == nil && p.active.Load() && work > 0 {
		d := min(time.Duration(float64(work)*p.yield), maxCompactionYield)
		p.sleep(d)
		p.slept.Add(int64(d))
	}
	f.last = p.now()
	return n, err
}

// pacingInterval is how often the store checks L0's depth.
const pacingInterval = 100 * time.Millisecond

// maxPacedDebt is the compaction debt (Pebble's estimate of the bytes to
// compact before every level is within its target size) above which
// compactions run at full speed however shallow L0 is. A 1M-object store
// carried ~0.3 GB writing steadily, ~1.1 GB after 1.8M bulk creates.
const maxPacedDebt = 2 << 30

// paceCompactions reports whether compactions may be paced: not once L0
// reaches the L0 compaction threshold (twice the depth at which Pebble
// starts compacting it), so a compaction that is falling behind runs at
// full speed long before writes would stall (at four times the
// threshold), nor while the levels below are far behind.
func paceCompactions(l0Sublevels int32, l0Threshold int, debt uint64) bool {
	return int(l0Sublevels) < l0Threshold && debt < maxPacedDebt
}

// runPacing keeps the pacer's active flag current until the store closes.
func (s *Store) runPacing() {
	defer s.wg.Done()
	t := time.NewTicker(pacingInterval)
	defer t.Stop()
	for {
		m := s.db.Metrics()
		s.pacer.active.Store(paceCompactions(m.Levels[0].Sublevels, s.opts.L0CompactionThreshold, m.Compact.EstimatedDebt))
		select {
		case <-t.C:
		case <-s.closing:
			return
		}
	}
}
