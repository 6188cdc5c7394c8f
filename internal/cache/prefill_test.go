package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// restartHistory is the history the restart tests share: writes seen by a
// first cache, which is then stopped, and writes made while no cache ran.
type restartHistory struct {
	r0 int64 // before any pod
	// r1 create a (n1, app=web)   r2 create b (n2, app=web)
	// r3 a: app=db                 -- first cache stopped --
	// r4 b: n2 -> n1               r5 delete a
	// r6 create c (n1, app=web)    r7 c: app=db          r8 another prefix
	r [9]int64
}

func writeRestartHistory(t *testing.T, e *env) restartHistory {
	var h restartHistory
	h.r0 = e.writeOther("before")
	h.r[1] = e.create(newPod("ns", "a", "n1", map[string]string{"app": "web"}))
	h.r[2] = e.create(newPod("ns", "b", "n2", map[string]string{"app": "web"}))
	h.r[3] = e.update(newPod("ns", "a", "n1", map[string]string{"app": "db"}))
	e.waitRev(h.r[3])
	e.c.Stop() // the API server goes away
	h.r[4] = e.update(newPod("ns", "b", "n1", map[string]string{"app": "web"}))
	h.r[5] = e.delete("ns", "a")
	h.r[6] = e.create(newPod("ns", "c", "n1", map[string]string{"app": "web"}))
	h.r[7] = e.update(newPod("ns", "c", "n1", map[string]string{"app": "db"}))
	h.r[8] = e.writeOther("after")
	return h
}

// expectEvents reads len(want) events from a watch from rev and compares
// their descriptions (see describe).
func expectEvents(t *testing.T, e *env, opts WatchOptions, want ...string) *Watcher {
	t.Helper()
	w, err := e.c.Watch(e.ctx, opts)
	if err != nil {
		t.Fatalf("watch from %s: %v", opts.ResourceVersion, err)
	}
	t.Cleanup(w.Stop)
	for i, wantEv := range want {
		if got := describe(next(t, w)); got != wantEv {
			t.Fatalf("watch from %s, event %d: got %s, want %s", opts.ResourceVersion, i, got, wantEv)
		}
	}
	return w
}

// TestRestartKeepsWindow: a cache started on a store with history serves
// watches (with selector transitions and index dispatch exact), exact
// lists and continue tokens from revisions before its start, as the
// previous cache would have; older than the prefill they get 410.
func TestRestartKeepsWindow(t *testing.T) {
	e := newEnv(t, nil)
	h := writeRestartHistory(t, e)
	e.startCache(nil) // restarted: lists at r8
	if got := e.c.Revision(); got != h.r[8] {
		t.Fatalf("restarted cache at %d, want %d", got, h.r[8])
	}
	r := h.r
	ev := func(typ, name string, rev int64) string { return fmt.Sprintf("%s ns/%s@%d", typ, name, rev) }
	from := func(rev int64) string { return formatRV(rev) }

	// Every change since r0, in order.
	all := expectEvents(t, e, WatchOptions{ResourceVersion: from(h.r0)},
		ev("ADDED", "a", r[1]), ev("ADDED", "b", r[2]), ev("MODIFIED", "a", r[3]), ev("MODIFIED", "b", r[4]),
		ev("DELETED", "a", r[5]), ev("ADDED", "c", r[6]), ev("MODIFIED", "c", r[7]))
	// A label selector sees objects enter and leave it ("app" is an
	// indexed label: this watcher is dispatched by label value).
	web := expectEvents(t, e, WatchOptions{ResourceVersion: from(h.r0), Label: labels.SelectorFromSet(labels.Set{"app": "web"})},
		ev("ADDED", "a", r[1]), ev("ADDED", "b", r[2]), ev("DELETED", "a", r[3]), ev("MODIFIED", "b", r[4]),
		ev("ADDED", "c", r[6]), ev("DELETED", "c", r[7]))
	// A node's watch (the spec.nodeName index) from just before the stop.
	n1 := expectEvents(t, e, WatchOptions{ResourceVersion: from(r[2]), Field: fields.OneTermEqualSelector("spec.nodeName", "n1")},
		ev("MODIFIED", "a", r[3]), ev("ADDED", "b", r[4]), ev("DELETED", "a", r[5]),
		ev("ADDED", "c", r[6]), ev("MODIFIED", "c", r[7]))
	n2 := expectEvents(t, e, WatchOptions{ResourceVersion: from(r[2]), Field: fields.OneTermEqualSelector("spec.nodeName", "n2")},
		ev("DELETED", "b", r[4]))

	// Live changes follow the replayed ones on the same watchers.
	r9 := e.update(newPod("ns", "b", "n2", map[string]string{"app": "web"}))
	for _, tc := range []struct {
		w    *Watcher
		want string
	}{{all, ev("MODIFIED", "b", r9)}, {web, ev("MODIFIED", "b", r9)}, {n1, ev("DELETED", "b", r9)}, {n2, ev("ADDED", "b", r9)}} {
		if got := describe(next(t, tc.w)); got != tc.want {
			t.Fatalf("live event: got %s, want %s", got, tc.want)
		}
	}

	// Exact lists before the restart, from the window's undo.
	for _, tc := range []struct {
		rev  int64
		want []string
	}{
		{r[1], []string{fmt.Sprintf("ns/a@%d", r[1])}},
		{r[3], []string{fmt.Sprintf("ns/a@%d", r[3]), fmt.Sprintf("ns/b@%d", r[2])}},
		{r[5], []string{fmt.Sprintf("ns/b@%d", r[4])}},
	} {
		got, res, err := e.list(ListOptions{ResourceVersion: from(tc.rev), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil || res.ResourceVersion != from(tc.rev) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Fatalf("exact list at %d: %v at %s, %v; want %v", tc.rev, got, res.ResourceVersion, err, tc.want)
		}
	}
	// A continue token issued by the old cache at r3 still works.
	got, res, err := e.list(ListOptions{Continue: encodeContinue(podKey("ns", "a")+"\x00", podPrefix, r[3])})
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]string{fmt.Sprintf("ns/b@%d", r[2])}) || res.ResourceVersion != from(r[3]) {
		t.Fatalf("continue at %d: %v at %s, %v", r[3], got, res.ResourceVersion, err)
	}
}

// TestRestartPrefillBound: the window reaches back PrefillRevisions
// (taking previous objects from the store's PrevValue where the window
// holds no earlier event on the key), and not further: older is 410.
func TestRestartPrefillBound(t *testing.T) {
	e := newEnv(t, nil)
	h := writeRestartHistory(t, e)
	r := h.r
	e.startCache(func(c *Config) { c.PrefillRevisions = r[8] - r[4] }) // window from r4
	_, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(r[3])})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from %d, before the prefill: %v, want 410", r[3], err)
	}
	// r5 deletes a, last written at r3 (before the window): its previous
	// object comes from the store event, with its own revision.
	expectEvents(t, e, WatchOptions{ResourceVersion: formatRV(r[4]), Label: labels.SelectorFromSet(labels.Set{"app": "db"})},
		fmt.Sprintf("DELETED ns/a@%d", r[5]), fmt.Sprintf("ADDED ns/c@%d", r[7]))
	got, _, err := e.list(ListOptions{ResourceVersion: formatRV(r[4]), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if want := []string{fmt.Sprintf("ns/a@%d", r[3]), fmt.Sprintf("ns/b@%d", r[4])}; err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("exact list at %d: %v, %v; want %v", r[4], got, err, want)
	}

	// Disabled: the window starts at the list, as before prefill existed.
	e.c.Stop()
	e.startCache(func(c *Config) { c.PrefillRevisions = -1 })
	if _, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(r[7])}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from %d without prefill: %v, want 410", r[7], err)
	}
}

// TestRestartPrefillCompacted: the window never reaches below the store's
// compacted revision.
func TestRestartPrefillCompacted(t *testing.T) {
	e := newEnv(t, nil)
	h := writeRestartHistory(t, e)
	r := h.r
	if err := e.store.Compact(e.ctx, r[5]); err != nil {
		t.Fatal(err)
	}
	e.startCache(nil)
	if _, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(r[4])}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from %d, compacted: %v, want 410", r[4], err)
	}
	expectEvents(t, e, WatchOptions{ResourceVersion: formatRV(r[5])},
		fmt.Sprintf("ADDED ns/c@%d", r[6]), fmt.Sprintf("MODIFIED ns/c@%d", r[7]))
}

// historyStore is the real store with its history watches doctored: fail
// makes a watch from before the list fail as if compacted meanwhile;
// stripPrev clears PrevValue on that revision, as an update that repaired
// a damaged value replays.
type historyStore struct {
	storage.Store
	fail      atomic.Bool
	stripPrev int64
}

func (s *historyStore) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	cur, err := s.Store.CurrentRevision(ctx)
	if err != nil {
		return nil, err
	}
	if s.fail.Load() && from != 0 && from < cur {
		return nil, fmt.Errorf("doctored: %w", &storage.CompactedError{Requested: from, Compacted: cur})
	}
	w, err := s.Store.Watch(ctx, prefix, from)
	if err != nil || s.stripPrev == 0 {
		return w, err
	}
	sw := &strippingWatcher{Watcher: w, out: make(chan storage.Event), done: make(chan struct{}), strip: s.stripPrev}
	go sw.run()
	return sw, nil
}

type strippingWatcher struct {
	storage.Watcher
	out   chan storage.Event
	done  chan struct{}
	strip int64
}

func (w *strippingWatcher) run() {
	defer close(w.out)
	for ev := range w.Watcher.Events() {
		if ev.Revision == w.strip && ev.Type != storage.EventProgress {
			ev.PrevValue, ev.PrevModRevision = nil, 0
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *strippingWatcher) Events() <-chan storage.Event { return w.out }

func (w *strippingWatcher) Stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.Watcher.Stop()
}

// TestRestartPrefillFallbacks: history that cannot be read leaves the
// window at the list (no error, no relist loop); an event whose previous
// value is unknown starts the window after it.
func TestRestartPrefillFallbacks(t *testing.T) {
	e := newEnv(t, nil)
	h := writeRestartHistory(t, e)
	r := h.r
	real := e.store

	doctored := &historyStore{Store: real}
	doctored.fail.Store(true)
	e.startCache(func(c *Config) { c.Store = doctored })
	if _, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(r[7])}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from %d with history gone: %v, want 410", r[7], err)
	}
	doctored.fail.Store(false) // the live watch from the list works
	r9 := e.create(newPod("ns", "d", "n1", nil))
	e.waitRev(r9)
	e.c.Stop()

	// r4 (the update of b, last written before the window) replays
	// without its previous value, as an update that repaired a damaged
	// value does.
	e.startCache(func(c *Config) {
		c.Store = &historyStore{Store: real, stripPrev: r[4]}
		c.PrefillRevisions = r9 - r[3] // from r3
	})
	if _, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(r[3])}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from %d, before an event with unknown prev: %v, want 410", r[3], err)
	}
	expectEvents(t, e, WatchOptions{ResourceVersion: formatRV(r[4])},
		fmt.Sprintf("DELETED ns/a@%d", r[5]), fmt.Sprintf("ADDED ns/c@%d", r[6]), fmt.Sprintf("MODIFIED ns/c@%d", r[7]), fmt.Sprintf("ADDED ns/d@%d", r9))
}

// TestBookmarkAllBeforeRestart: a quiet watcher given the shutdown
// bookmark (at the store's revision, not the cache's last change) resumes on the restarted cache although its last event is older
// than the restarted cache's window (without the bookmark: 410 and a
// relist); a watcher that did not ask for bookmarks gets none.
func TestBookmarkAllBeforeRestart(t *testing.T) {
	e := newEnv(t, nil)
	last := e.create(newPod("ns", "a", "n1", nil))
	e.waitRev(last)
	onN1 := fields.OneTermEqualSelector("spec.nodeName", "n1")
	quiet, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(last), Field: onN1, AllowBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(last), Field: onN1})
	if err != nil {
		t.Fatal(err)
	}
	// Writes elsewhere in the store (a thousand Lease renewals a second
	// in a large cluster) do not move this cache's revision: BookmarkAll
	// must bring it up to the store's first.
	var rev int64
	for i := range 20 {
		rev = e.writeOther(fmt.Sprint("other-", i))
	}
	// The client reads while the server waits for it to have read.
	got := make(chan *Event, 1)
	go func() { got <- <-quiet.ResultChan() }()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	e.c.BookmarkAll(ctx)
	if ctx.Err() != nil {
		t.Fatal("BookmarkAll waited for a watcher that had read its events")
	}
	select {
	case ev := <-got:
		if ev == nil || describe(ev) != fmt.Sprintf("BOOKMARK@%d", rev) {
			t.Fatalf("quiet watcher got %v, want a bookmark at %d", ev, rev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no bookmark")
	}
	select {
	case ev, ok := <-plain.ResultChan():
		if !ok {
			t.Fatalf("watcher without bookmarks ended")
		}
		t.Fatalf("watcher without bookmarks got %s", describe(ev))
	default:
	}
	e.c.Stop()

	e.startCache(func(c *Config) { c.PrefillRevisions = 10 }) // window from rev-10, after last
	if _, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(last), Field: onN1}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from the last event (%d): %v, want 410", last, err)
	}
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(rev), Field: onN1, AllowBookmarks: true})
	if err != nil {
		t.Fatalf("resuming from the shutdown bookmark (%d): %v", rev, err)
	}
	w.Stop()
}
