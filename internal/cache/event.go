package cache

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one change delivered to a Watcher. The same *Event is handed to
// every watcher it concerns, so Encoded lets the wire layer serialize it once
// per format for all of them. Events must be treated as read-only.
type Event struct {
	// Type is watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, or
	// watch.Error (the object is then a *metav1.Status, the last event
	// before the channel closes).
	Type watch.EventType
	// Revision is the store revision of the change (of the bookmark).
	Revision int64
	// Stored is the object's stored value when the cache keeps stored
	// bytes: for a consumer that passes them through to the wire as
	// ListStored's do, setting Revision as metadata.resourceVersion (the
	// value does not carry it). Such a consumer never decodes: a Lease
	// renewal watched by protobuf clients costs no decode and no encode.
	// nil for bookmarks and errors and in a cache that retains decoded
	// objects.
	Stored *Stored

	// decode makes the object on first use when it is not set at
	// construction (Stored events); once guards it.
	decode func() (runtime.Object, error)
	once   sync.Once
	obj    runtime.Object
	objErr error
	memo   memo
}

// Object returns the event's object, with metadata.resourceVersion ==
// Revision (for Deleted, the last state of the object with the revision of
// its deletion). An event that carries Stored decodes it on the first call
// (once for every watcher sharing the event); the object is shared and
// must not be modified. The error is a decode failure, an internal error.
func (e *Event) Object() (runtime.Object, error) {
	if e.decode != nil {
		e.once.Do(func() { e.obj, e.objErr = e.decode() })
	}
	return e.obj, e.objErr
}

// memo holds encodings of one event, one per wire format. It is guarded by a
// plain mutex held across encode: the second watcher asking for the same
// format waits for the first instead of encoding again.
type memo struct {
	mu      sync.Mutex
	entries []memoEntry
}

type memoEntry struct {
	format string
	data   []byte
}

// Encoded returns encode() for format, calling encode at most once per
// format for the lifetime of the memo however many watchers ask. The
// returned bytes are shared: callers must not modify them. Safe for
// concurrent use. format is the caller's name for the wire format (e.g.
// "json", "protobuf", or the content type plus any framing); encode may
// encode the whole watch frame, not just the object, from Object or from
// Stored, as long as the result is a function of (format, e).
func (e *Event) Encoded(format string, encode func() ([]byte, error)) ([]byte, error) {
	e.memo.mu.Lock()
	defer e.memo.mu.Unlock()
	for _, m := range e.memo.entries {
		if m.format == format {
			return m.data, nil
		}
	}
	data, err := encode()
	if err != nil {
		return nil, err
	}
	e.memo.entries = append(e.memo.entries, memoEntry{format: format, data: data})
	return data, nil
}
