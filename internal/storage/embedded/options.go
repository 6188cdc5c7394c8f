package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures a Store. The zero value of every field except Dir means
// "use the default" stated on the field; Open fills defaults into a copy, so
// callers may reuse an Options value.
type Options struct {
	// Dir is the directory holding the Pebble database. Required; created if
	// missing.
	Dir string

	// MaxBatchOps bounds how many queued writes the writer goroutine commits
	// in one fsync'd batch (group commit). Default 1024.
	MaxBatchOps int
	// MaxBatchBytes bounds the value bytes in one group-commit batch; a single
	// write larger than this still commits, alone. Default 8 MiB.
	MaxBatchBytes int

	// WatchRingEvents is how many of the most recent events are kept in memory
	// so that watches starting from a recent revision need no disk reads.
	// Default 8192.
	WatchRingEvents int
	// WatchRingBytes bounds the value bytes (values and previous values)
	// held by that ring; whichever of
	// the two limits is reached first evicts the oldest events. Default 64 MiB.
	WatchRingBytes int
	// WatchBuffer is the number of live events buffered per watcher. A watcher
	// whose consumer falls further behind than this is ended with
	// ErrWatcherTooSlow (the caller re-watches from its last revision) rather
	// than slowing the writer or buffering without bound. Default 4096.
	WatchBuffer int
	// ReplayChunk is how many history records a watch reads from disk per
	// pass when catching up from an old revision. Default 1024.
	ReplayChunk int
	// CompactChunk is how many writes' obsolete history Compact deletes
	// per batch (Store.Compact). Default 262144, a batch of 3–6 MB:
	// compacting the API server's five minutes of 7,000 writes/s in one
	// batch would put 40 MB in the WAL ahead of the writer's next commit.
	// At 1M objects, compacting 275k revisions every 55 s under 5,000
	// updates/s, 16384-write chunks did not lower the writes' p99 or
	// p99.9 against one batch (docs/bench/storage.md, "Values in history
	// only").
	CompactChunk int
	// RetireInterval is the least time between two rounds of deleting
	// obsolete history (Store.Compact). A compaction that comes sooner
	// records its revision, which is all watchers see, and leaves the
	// deleting to the next compaction after the interval. Default one
	// minute; negative: every compaction deletes.
	//
	// Why: the history an update makes obsolete is the key's previous
	// write, anywhere in the store's past, so a round of deletions lands
	// all over the history records' range, and the next L0 compaction
	// rewrites all of that range (keys and blob handles, ~30 MB at a
	// million objects). Compacting every second (what storebench does) then
	// cost every flush such a rewrite: updates' p99 at 1M objects went
	// from 1.6 to 2.6-2.9 ms, while the API server's five-minute
	// compactions are unaffected (docs/bench/storage.md, "Key log").
	RetireInterval time.Duration
	// CheckpointWrites is how many writes the key log (keyindex.go) may
	// hold since the last checkpoint of the key index before a new one is
	// written, unless the store holds more than twice as many keys: then
	// it may hold half as many writes as there are keys, so Open replays
	// at most that many and a checkpoint costs two records per write
	// (checkpoint.go). Default 100,000.
	CheckpointWrites int

	// CacheSize is Pebble's block cache size in bytes. Default 64 MiB.
	CacheSize int64
	// MemTableSize is Pebble's memtable size in bytes. Default 64 MiB.
	MemTableSize uint64
	// L0CompactionThreshold sets how deep L0 (the flushed memtables) may
	// grow before Pebble compacts it into the level below: Pebble starts
	// at half this many sublevels and stops writes at four times this
	// many. Default 16 (Pebble's own is 4, starting at 2 and stalling at
	// 12). Chosen when the store still kept a record per object key (a
	// hashed name, so every flush overlapped the whole of that level and
	// each L0 compaction rewrote all of it): starting at 8 sublevels
	// rather than 2 rewrote it a quarter as often. At 1M objects and
	// 5,000 paced writes/s that cut compaction output 2.6–9× and creates'
	// p99 by about a quarter (docs/bench/storage.md). Deleting obsolete
	// history still lands all over the older records' range, so the
	// setting stands. The price is more L0 files for a point
	// read to consult; the bloom filters keep that cheap, and the API
	// server reads from its cache.
	L0CompactionThreshold int
	// CompactionYield paces Pebble's compactions while L0 is shallow (fewer
	// than L0CompactionThreshold sublevels): after each block a compaction
	// writes, it sleeps CompactionYield times as long as the block took to
	// produce (at most 20 ms), so foreground writes get the CPU first on a
	// small machine. Flushes are never paced, nor are compactions once L0
	// is that deep or the levels below are far behind (pacing.go). At 1M
	// objects on 2 cores, 5,000 updates/s had p99 3.7–4.5 ms with it
	// against 5.0–5.6 ms without (the 10k store: 3.1–3.8 ms), and
	// unpaced bulk creates ran at 32–34k writes/s against 26k
	// (docs/bench/storage.md, "Compaction pacing"). Default 3; negative
	// disables pacing.
	CompactionYield float64
	// BlobValueMinSize turns on Pebble's value separation: records of at
	// least this many bytes (history records, which hold the objects) go
	// to blob files when a memtable is flushed, and compactions then
	// rewrite small handles instead of the values. Without it every object
	// is rewritten by each compaction level it passes through; when
	// objects were still stored twice (format 1), a 1M-pod store at 5,000
	// paced writes/s wrote ~20% fewer bytes to disk and used ~10% less CPU
	// with it (docs/bench/storage.md); on-disk size grows ~9% (garbage in
	// blob files is rewritten once it passes 20%). Default 256; negative
	// disables it. Existing blob files stay readable either way.
	BlobValueMinSize int

	// FS is the filesystem Pebble uses. Default vfs.Default (the OS); tests
	// inject faults through it.
	FS vfs.FS
	// Logger receives Pebble's informational messages (at Debug) and errors.
	// Default slog.Default().
	Logger *slog.Logger
}

// withDefaults validates o and returns a copy with every default filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("embedded: Options.Dir is required")
	}
	for name, v := range map[string]int{
		"MaxBatchOps": o.MaxBatchOps, "MaxBatchBytes": o.MaxBatchBytes,
		"WatchRingEvents": o.WatchRingEvents, "WatchRingBytes": o.WatchRingBytes,
		"WatchBuffer": o.WatchBuffer, "ReplayChunk": o.ReplayChunk, "CompactChunk": o.CompactChunk, "CheckpointWrites": o.CheckpointWrites,
		"L0CompactionThreshold": o.L0CompactionThreshold,
	} {
		if v < 0 {
			return o, fmt.Errorf("embedded: Options.%s is %d, must not be negative", name, v)
		}
	}
	if o.CacheSize < 0 {
		return o, fmt.Errorf("embedded: Options.CacheSize is %d, must not be negative", o.CacheSize)
	}
	setDefault(&o.MaxBatchOps, 1024)
	setDefault(&o.MaxBatchBytes, 8<<20)
	setDefault(&o.WatchRingEvents, 8192)
	setDefault(&o.WatchRingBytes, 64<<20)
	setDefault(&o.WatchBuffer, 4096)
	setDefault(&o.ReplayChunk, 1024)
	setDefault(&o.CompactChunk, 262144)
	setDefault(&o.CheckpointWrites, 100000)
	if o.RetireInterval == 0 {
		o.RetireInterval = time.Minute
	}
	setDefault(&o.L0CompactionThreshold, 16)
	setDefault(&o.BlobValueMinSize, 256)
	if math.IsNaN(o.CompactionYield) || math.IsInf(o.CompactionYield, 0) {
		return o, fmt.Errorf("embedded: Options.CompactionYield is %v, must be a number", o.CompactionYield)
	}
	if o.CompactionYield == 0 {
		o.CompactionYield = 3
	}
	if o.CacheSize == 0 {
		o.CacheSize = 64 << 20
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 64 << 20
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

func setDefault(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

// pebbleLogger routes Pebble's logging to slog. Pebble is chatty at Info
// (every flush and compaction), so that goes to Debug.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf must not return (Pebble relies on it). It panics with a
// pebbleFatal rather than exiting: Pebble reports a failed WAL write or sync
// (a full disk) this way from inside Batch.Commit, after the commit pipeline
// has released its locks, and the writer recovers it there to fail the
// writes and keep serving reads (see Store.commitBatch). Anywhere else the
// panic crashes the process, as Pebble intends.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble", "fatal", true)
	f := pebbleFatal{msg: msg}
	for _, a := range args {
		if err, ok := a.(error); ok && f.cause == nil {
			f.cause = err // keep errors.Is(err, syscall.ENOSPC) working
		}
	}
	panic(f)
}

// pebbleFatal is the panic value of pebbleLogger.Fatalf.
type pebbleFatal struct {
	msg   string
	cause error
}

func (f pebbleFatal) Error() string { return f.msg }
func (f pebbleFatal) Unwrap() error { return f.cause }
