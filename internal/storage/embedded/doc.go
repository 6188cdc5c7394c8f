// Package embedded is Myriad's default storage.Store: a single-node store on
// Pebble (github.com/cockroachdb/pebble/v2), the LSM engine under CockroachDB.
//
// # Why Pebble
//
// The seeds' large-cluster reports show etcd's bbolt backend degrading as the
// database grows: etcd's 2 GB default and 8 GB suggested quota exist because
// bbolt is a single B+tree file whose freelist is scanned on every commit and
// whose pages are never returned without an offline defrag, so write latency
// and restart time grow with data size. An LSM tree writes sequentially (WAL
// + memtable flushes), keeps the data in immutable sorted files compacted in
// the background, and does not slow down as the key count grows into the
// millions; range deletion makes dropping history cheap. Pebble is
// production-proven at multi-TB scale and is pure Go.
//
// # Layout
//
// Pebble keys (FORMAT.md has every record byte by byte, codec.go the
// encoders). Every record but the meta records is keyed by revision,
// big-endian so it sorts by revision: the store only ever appends, and
// compaction deletes old records.
//
//	h<rev>       history: crc32c | type | createRev | [prevModRev] | key | value
//	x<rev>       key log: crc32c | type | createRev | key (the history
//	             record without its value)
//	c<C><key>    key-index checkpoint at revision C: crc32c | modRev |
//	             createRev (checkpoint.go)
//	m/checkpoint the latest checkpoint's revision
//	r<rev>       retire record: the history the write at rev made obsolete
//	m/current    revision of the last committed batch
//	m/compacted  history at or below this revision is gone, except each
//	             key's write that was current at it
//	m/format     the layout's version, 3: Open refuses any other (format.go)
//
// A value is stored once, in the history record of the write that put it.
// Which revision holds each key's current value is kept in memory, in the
// key index (keyindex.go), the split etcd's mvcc makes between its
// in-memory treeIndex and its revision-keyed store. Open rebuilds the index
// from the latest checkpoint (the whole index, one small record per key)
// and the key log after it (~80 bytes per write), not from every value.
// A background goroutine writes a new checkpoint, as an ingested sstable,
// once the log holds more writes than the store holds keys, and drops the
// log it covers with a range deletion.
// Get looks the key up in the index, then reads that history record; List
// takes the prefix's keys from the index, then reads their values in
// revision order. Watch replay reads history in order, and an update's or
// delete's previous value from the history record its prevModRev names.
//
// Why no record keyed by the object's key (formats 1 and 2, which never
// shipped, kept each key's latest value or an index record under it):
// keys are hashed names, so every memtable flush overlapped the whole
// range of those records, and each L0 compaction rewrote all of it; at a
// million objects that was the main cost left under write latency.
// Records keyed by revision only grow, so flushed records move down the
// LSM with little rewriting (docs/bench/storage.md, "Values in history
// only", "Key log").
//
// Compaction (Store.Compact) cannot drop all history below a revision, as
// that holds the current values of keys not written since. Each update
// and delete therefore writes a retire record naming the write it made
// obsolete (and, for a delete, itself); compacting to revision C deletes
// the history records that the retire records at or below C name, then
// those retire records, at most once per Options.RetireInterval. A damaged history record that a
// replayed event's previous value lives in fails that replay with
// ErrCorrupt until compaction passes the event.
//
// Records of 256 bytes or more (the history records of any real object)
// are written to Pebble's blob files when the memtable is flushed, and the
// sstables keep a handle to them (Options.BlobValueMinSize), so compactions
// rewrite keys and handles, not objects.
//
// Every write stores its history, key-log and retire records, plus
// m/current, in one batch; so after a crash they always agree. A
// checkpoint becomes current only with the fsync'd batch that records it,
// after every write it holds. Each
// record's CRC32C covers the Pebble key too; a record that fails it is
// reported as storage.ErrCorrupt naming the key and revision, never
// served. A key whose current value is damaged can be repaired by an
// Update (its CAS is checked against the index); Delete, which must return
// the old value, reports ErrCorrupt. A damaged key-log record is read from
// its history record at Open; if both are damaged and no later write
// replaced the write, Open fails naming its revision (loadKeyIndex).
//
// Update reads the value it replaces in the caller's goroutine before
// queueing (writer.go, Store.peek), for the live event's PrevValue, and the
// writer checks it is still current against the index; the writer reads the
// LSM itself only when that read is stale, and for a Delete (which returns
// the old value).
//
// # Writes: group commit
//
// One writer goroutine (writer.go) owns revision assignment and is the only
// one to change the key index, so preconditions are checked without
// reading the LSM. Concurrent
// Create/Update/Delete calls queue on an unbuffered channel; the writer takes
// one, drains whatever else is waiting (bounded by Options.MaxBatchOps and
// MaxBatchBytes), checks each op's precondition against an indexed batch (so
// op 2 sees op 1 of the same batch), assigns consecutive revisions to the ops
// that pass, and applies the batch to Pebble with its WAL fsync requested but
// not awaited (DB.ApplyNoSyncWait). A second goroutine, the syncer, waits for
// each batch's fsync (Batch.SyncWait) in order and only then publishes its
// events and acknowledges every op, so the writer prepares batch N+1 while
// batch N's fsync is in flight; at most two batches are applied but not yet
// acknowledged. Pebble syncs its WAL in order, so revisions are acknowledged
// strictly increasing and without gaps. A failed precondition consumes no
// revision. The fsync is shared by the whole batch, which is what makes
// durable writes cheap under concurrency.
//
// Pebble makes a batch readable as soon as it is applied, before its WAL
// fsync returns; Get and List that observe such a batch wait until it is
// acknowledged (Store.awaitDurable), and watch replay reads only published
// revisions, so no reader sees a write a crash could still undo. (Only the
// writer itself, checking the next batch's preconditions, and Update's peek
// for PrevValue read past the acknowledged revision.)
//
// If Pebble fails a commit (disk full, I/O error) the affected writes fail,
// and so do those of every later batch already applied (their revisions
// follow a batch whose fate is unknown); the store turns read-only (Health
// reports why) and keeps serving reads; reopening recovers whatever the WAL
// holds. One case Pebble does not survive: a failure while it rotates the
// WAL at a full memtable (rotateWAL panics, and the runtime aborts the
// process). Nothing acknowledged is lost then either — the kill test's case
// — but the process must be restarted.
//
// # Watches
//
// The hub (hub.go) keeps a ring of the most recent events (a contiguous run
// of revisions) and the set of live watchers. A watch from a revision the
// ring covers registers at once; an older one replays the history log from a
// Pebble snapshot in chunks until the ring covers its cursor, then registers.
// Registration and publication share one mutex, which is what makes the
// disk-to-live handoff free of gaps and duplicates. Each watcher has a
// bounded queue, grown as events arrive (most watchers are idle, and a
// buffer allocated at its bound cost each ~400 KB); the watcher's
// goroutine hands its consumer up to outBuffer events ahead of its
// reads, a burst in one wake-up. The writer never waits for a watcher, and a
// watcher that falls further behind than Options.WatchBuffer (queued,
// in hand or handed over) is ended with ErrWatcherTooSlow so the caller
// re-watches from its last revision.
// Event values and previous values are shared between watchers and must
// not be modified.
package embedded
