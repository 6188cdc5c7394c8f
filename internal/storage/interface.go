package storage

import (
	"context"
	"errors"
	"fmt"
)

// KeyValue is one stored value as of a revision.
type KeyValue struct {
	Key string
	// Value is owned by the caller once returned; backends never reuse it.
	Value []byte
	// ModRevision is the revision of the write that produced Value.
	ModRevision int64
	// CreateRevision is the revision at which the key was (last) created.
	CreateRevision int64
}

// EventType says what an Event reports.
type EventType int

const (
	// EventPut is a create or an update of Key.
	EventPut EventType = iota + 1
	// EventDelete is the removal of Key; Value is empty, PrevValue holds
	// the deleted value.
	EventDelete
	// EventProgress carries no key: it promises that every event with a
	// revision <= Revision matching the watch has already been delivered.
	EventProgress
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "PUT"
	case EventDelete:
		return "DELETE"
	case EventProgress:
		return "PROGRESS"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change delivered by a Watch, in revision order.
type Event struct {
	Type EventType
	// Key is empty for EventProgress.
	Key string
	// Value is the new value for EventPut, nil otherwise.
	Value []byte
	// Revision is the revision of the write (for EventProgress, the revision
	// the watch is known to be complete up to).
	Revision int64
	// CreateRevision is set for EventPut.
	CreateRevision int64
	// PrevValue is the value before this event: for EventPut, the value it
	// replaced when the key existed (nil for a create); for EventDelete, the
	// deleted value; nil for EventProgress. It lets a consumer that did not
	// see the earlier write (a cache filling its event window from history)
	// know what changed, as etcd's PrevKV watch option does. An empty
	// previous value is a non-nil empty slice. Like Value it is shared
	// between watchers and must not be modified. One update has none: an
	// update that replaced a value the backend could not read (damaged on
	// disk, ErrCorrupt; such an update is how it is repaired) carries nil
	// and PrevModRevision 0, and a consumer must treat its previous value
	// as unknown, not as absent. A delete always carries the deleted value.
	PrevValue []byte
	// PrevModRevision is the ModRevision of PrevValue (0 when PrevValue is
	// nil), so a consumer can serve the previous object as of its own
	// revision. Its CreateRevision is the event's CreateRevision: an update
	// or a delete does not change it.
	PrevModRevision int64
}

// Watcher is a running watch. Events arrive in strictly increasing revision
// order on Events; the channel is closed when the watch ends, after which Err
// says why (nil when the caller stopped it or its context ended).
type Watcher interface {
	Events() <-chan Event
	// RequestProgress asks the backend to deliver an EventProgress with a
	// revision at least as new as CurrentRevision at the time of the call, once
	// every earlier matching event has been delivered. This is how a cache
	// learns it is up to date when its own keys are quiet (the rv@t0 protocol).
	RequestProgress()
	// Stop ends the watch and releases its resources; it is idempotent.
	Stop()
	// Err reports why Events was closed.
	Err() error
}

// Store is implemented by every backend. All methods are safe for concurrent
// use. Every write method returns only once the write is durable.
type Store interface {
	// Get returns the latest value of key, or ErrNotFound. It is linearizable:
	// it sees every write acknowledged before it was called.
	Get(ctx context.Context, key string) (KeyValue, error)

	// List returns every key with the given prefix in key order, as one
	// consistent snapshot, together with the revision of that snapshot
	// (the store's current revision when it was taken). It is linearizable.
	List(ctx context.Context, prefix string) ([]KeyValue, int64, error)

	// Create stores value under key if the key does not exist and returns the
	// new revision; otherwise it returns ErrExists.
	Create(ctx context.Context, key string, value []byte) (int64, error)

	// Update replaces the value of key if its current ModRevision equals
	// expectedRevision (compare-and-swap) and returns the new revision. It
	// returns ErrNotFound if key is absent and ErrConflict (wrapping the
	// current KeyValue, see ConflictError) if the revision differs.
	Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error)

	// Delete removes key if its current ModRevision equals expectedRevision,
	// or unconditionally when expectedRevision is 0. It returns the deleted
	// KeyValue and the revision of the delete. Errors as for Update.
	Delete(ctx context.Context, key string, expectedRevision int64) (KeyValue, int64, error)

	// Watch streams every change to keys with the given prefix whose revision
	// is greater than fromRevision, in order, exactly once. fromRevision 0
	// means "from now". If fromRevision is older than the oldest revision the
	// store still has history for, Watch returns ErrCompacted. The watch ends
	// when ctx is done or Stop is called.
	Watch(ctx context.Context, prefix string, fromRevision int64) (Watcher, error)

	// CurrentRevision returns the revision of the latest acknowledged write.
	CurrentRevision(ctx context.Context) (int64, error)

	// Compact discards history at and below revision; watches from
	// revisions below it fail with ErrCompacted afterwards. Compacting to a
	// revision already compacted is a no-op; a revision newer than the
	// current one is an error.
	Compact(ctx context.Context, revision int64) error

	// CompactedRevision returns the newest revision compacted away (0 if
	// none): watches must start from this revision or later.
	CompactedRevision(ctx context.Context) (int64, error)

	// Health returns nil when the store can serve reads and writes.
	Health(ctx context.Context) error

	// Close releases the store. Pending writes fail with ErrClosed.
	Close() error
}

// Sentinel errors; backends wrap them with the key and revision involved.
var (
	ErrNotFound  = errors.New("storage: key not found")
	ErrExists    = errors.New("storage: key already exists")
	ErrConflict  = errors.New("storage: revision conflict")
	ErrCompacted = errors.New("storage: revision has been compacted")
	ErrClosed    = errors.New("storage: store is closed")
	// ErrCorrupt reports data on disk that failed validation; it is wrapped
	// with the key and revision and never silently served.
	ErrCorrupt = errors.New("storage: corrupt data")
)

// ConflictError is returned (wrapping ErrConflict) by Update and Delete when
// the expected revision does not match; Current is the value actually stored,
// so callers can retry without another read.
type ConflictError struct {
	Key      string
	Expected int64
	Current  KeyValue
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("storage: revision conflict on %q: expected %d, current %d", e.Key, e.Expected, e.Current.ModRevision)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// CompactedError is returned (wrapping ErrCompacted) when a watch asks for
// history the store no longer has.
type CompactedError struct {
	Requested, Compacted int64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("storage: revision %d has been compacted (oldest available %d)", e.Requested, e.Compacted+1)
}

func (e *CompactedError) Unwrap() error { return ErrCompacted }
