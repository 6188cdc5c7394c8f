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
	// watch.Error (Object is then a *metav1.Status, the last event before
	// the channel closes).
	Type watch.EventType
	// Object carries metadata.resourceVersion == Revision (for Deleted, the
	// last state of the object with the revision of its deletion).
	Object runtime.Object
	// Revision is the store revision of the change (of the bookmark).
	Revision int64
	// Stored, when not nil, replaces Object: the object's stored value,
	// for an initial ADDED event of a watch with InitialStored. It does
	// not carry Revision as metadata.resourceVersion; the consumer sets
	// that, as ListStored's do.
	Stored *Stored

	memo memo
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

// Encoded returns encode(e.Object) for format, calling encode at most once
// per format for the lifetime of the memo however many watchers ask. The
// returned bytes are shared: callers must not modify them. Safe for
// concurrent use. format is the caller's name for the wire format (e.g.
// "json", "protobuf", or the content type plus any framing); encode may
// encode the whole watch frame, not just the object, as long as it is a
// function of (format, e).
func (e *Event) Encoded(format string, encode func(runtime.Object) ([]byte, error)) ([]byte, error) {
	e.memo.mu.Lock()
	defer e.memo.mu.Unlock()
	for _, m := range e.memo.entries {
		if m.format == format {
			return m.data, nil
		}
	}
	data, err := encode(e.Object)
	if err != nil {
		return nil, err
	}
	e.memo.entries = append(e.memo.entries, memoEntry{format: format, data: data})
	return data, nil
}
