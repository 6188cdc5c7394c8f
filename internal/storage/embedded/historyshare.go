package embedded

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// History shared between replaying watchers.
//
// The history is one log for every prefix, so a watch replaying revisions
// (a, b] reads every record in that range, whichever prefix it watches.
// After an API server restart every watch cache (dozens: one per resource
// type) replays the same last PrefillRevisions at once, each reading and
// checksumming all of those records for the few of its own. Replays read
// history in chunks aligned to Options.ReplayChunk revisions; a whole
// chunk is read from disk once, every prefix's events in it kept, and the
// watchers wanting it share that read. The last, incomplete chunk is
// not shared: a watcher lagging behind the writes reads it from where it
// is, for its own prefix, as every watcher did before, rather than
// re-reading the chunk from its start each time it grew. The last sharedChunks chunks stay in memory
// (their values are shared with the events delivered, which watchers must
// not modify anyway: storage.Event).

// sharedChunks is how many chunks are kept: a restart's 20,000 revisions
// at the default ReplayChunk of 1,024, with room for stragglers.
// sharedChunkTTL is how long a chunk is kept after it was read: replays
// that start together (a restart's) come within it, and the memory goes
// back soon after.
const (
	sharedChunks   = 32
	sharedChunkTTL = 30 * time.Second
)

type historyShare struct {
	mu sync.Mutex
	// chunks are by their base: they hold the revisions after it.
	chunks map[int64]*sharedChunk
	order  []int64 // bases, oldest first, for eviction
	// expiry drops every chunk sharedChunkTTL after the first of them was
	// read; nil when there are none.
	expiry *time.Timer
	// reads counts chunks read from disk, for tests.
	reads atomic.Int64
}

// sharedChunk is one chunk's read, or the read in progress (ready open).
type sharedChunk struct {
	ready  chan struct{}
	events []storage.Event // every prefix's, Values set, no PrevValues
	// The chunk holds the revisions in (from, last]: from is above its
	// base when history was compacted past that, last below the next
	// base when history ended there.
	from, last int64
	err        error
}

// readHistoryShared returns the events of prefix after revision after in
// the chunk holding after+1 (shared when it is whole), with their
// previous values, and the last revision the read covered (events of
// other prefixes up to it are skipped, not returned). It fails as
// readHistory does.
func (s *Store) readHistoryShared(ctx context.Context, after int64, prefix string) ([]storage.Event, int64, error) {
	size := int64(s.opts.ReplayChunk)
	base := after - after%size
	var events []storage.Event
	var last int64
	if base+size <= s.hub.currentRevision() {
		ch, err := s.historyChunk(ctx, base, after)
		if err != nil {
			return nil, 0, err
		}
		events, last = ch.events, ch.last
	} else {
		var err error
		if events, err = s.readHistory(ctx, after, s.opts.ReplayChunk, prefix); err != nil {
			return nil, 0, err
		}
		last = events[len(events)-1].Revision // readHistory returns at least one
	}
	var out []storage.Event
	for _, ev := range events {
		if ev.Revision <= after || !strings.HasPrefix(ev.Key, prefix) {
			continue
		}
		if ev.PrevModRevision != 0 {
			if err := readPrevValue(s.db, &ev); err != nil {
				// What made it unreadable may be a compaction since.
				return nil, 0, s.compactedPast(after, err)
			}
		}
		out = append(out, ev)
	}
	// The previous values were read from the live database, not from the
	// snapshot the events came from: they are the events' only if
	// compaction did not pass after meanwhile.
	if err := s.compactedPast(after, nil); err != nil {
		return nil, 0, err
	}
	return out, last, nil
}

// compactedPast is a CompactedError when compaction has passed after,
// else err.
func (s *Store) compactedPast(after int64, err error) error {
	if comp := s.compacted.Load(); after < comp {
		return fmt.Errorf("embedded: watch replay: %w", &storage.CompactedError{Requested: after, Compacted: comp})
	}
	return err
}

// historyChunk returns the chunk after base, covering at least after+1:
// the shared one when there is one, else read now (once, however many
// watchers ask meanwhile).
func (s *Store) historyChunk(ctx context.Context, base, after int64) (*sharedChunk, error) {
	h := &s.history
	size := int64(s.opts.ReplayChunk)
	for {
		h.mu.Lock()
		if h.chunks == nil {
			h.chunks = make(map[int64]*sharedChunk)
		}
		ch, ok := h.chunks[base]
		if ok {
			h.mu.Unlock()
			select {
			case <-ch.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if ch.err == nil && ch.from <= after && ch.last > after {
				return ch, nil
			}
			// Failed, or does not reach after+1 (read when history
			// ended before): read again, unless another watcher already
			// replaced it.
			h.mu.Lock()
			if h.chunks[base] == ch {
				h.dropLocked(base)
			}
			h.mu.Unlock()
			continue
		}
		ch = &sharedChunk{ready: make(chan struct{})}
		h.chunks[base] = ch
		h.order = append(h.order, base)
		for len(h.order) > sharedChunks {
			h.dropLocked(h.order[0])
		}
		if h.expiry == nil {
			h.expiry = time.AfterFunc(sharedChunkTTL, h.dropAll)
		}
		h.mu.Unlock()
		// Read with the store's lifetime, not the first asker's: the
		// others wait for it. readHistory stops when the store closes.
		// History at or below the compacted revision is gone: start
		// above it (a reader below it fails with a CompactedError).
		ch.from = max(base, min(s.compacted.Load(), after))
		h.reads.Add(1)
		ch.events, ch.err = s.readHistory(context.WithoutCancel(ctx), ch.from, int(base+size-ch.from), "")
		if n := len(ch.events); n > 0 {
			ch.last = ch.events[n-1].Revision
		}
		close(ch.ready)
		if ch.err != nil {
			return nil, ch.err
		}
		if ch.last <= after {
			return nil, fmt.Errorf("embedded: history for revision %d is missing: %w", after+1, storage.ErrCorrupt)
		}
		return ch, nil
	}
}

// dropAll forgets every chunk (a chunk being read is still handed to
// those waiting for it).
func (h *historyShare) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.chunks)
	h.order = h.order[:0]
	h.expiry = nil
}

// dropLocked forgets the chunk after base.
func (h *historyShare) dropLocked(base int64) {
	delete(h.chunks, base)
	for i, b := range h.order {
		if b == base {
			h.order = append(h.order[:i], h.order[i+1:]...)
			break
		}
	}
}
