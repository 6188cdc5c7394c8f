package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

func ptr[T any](v T) *T { return &v }

func TestWatchResourceVersions(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinEvents, c.MaxEvents = 8, 8 })
	r1 := e.create(newPod("ns", "a", "n1", nil))
	r2 := e.create(newPod("ns", "b", "n1", nil))
	r3 := e.update(newPod("ns", "a", "n2", nil))
	r4 := e.delete("ns", "b")
	e.waitRev(r4)
	rv := formatRV

	cases := []struct {
		name string
		opts WatchOptions
		want []string // first events, in order
	}{
		{"from r1 replays later changes", WatchOptions{ResourceVersion: rv(r1)},
			[]string{"ADDED ns/b@" + rv(r2), "MODIFIED ns/a@" + rv(r3), "DELETED ns/b@" + rv(r4)}},
		{"from r2 by node n1: a leaves n1", WatchOptions{ResourceVersion: rv(r2), Field: fields.OneTermEqualSelector("spec.nodeName", "n1")},
			[]string{"DELETED ns/a@" + rv(r3), "DELETED ns/b@" + rv(r4)}},
		{"unset: state as ADDED", WatchOptions{}, []string{"ADDED ns/a@" + rv(r3)}},
		{"0: state as ADDED", WatchOptions{ResourceVersion: "0"}, []string{"ADDED ns/a@" + rv(r3)}},
		{"sendInitialEvents with bookmarks", WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true},
			[]string{"ADDED ns/a@" + rv(r3), "BOOKMARK@" + rv(r4)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := e.c.Watch(e.ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var got []string
			for range tc.want {
				got = append(got, describe(next(t, w)))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("initial-events-end annotation", func(t *testing.T) {
		w, err := e.c.Watch(e.ctx, WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true, ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		next(t, w)
		bm := next(t, w)
		m, _ := meta.Accessor(evObj(bm))
		if bm.Type != watch.Bookmark || m.GetAnnotations()[initialEventsEndAnnotation] != "true" || m.GetResourceVersion() != rv(r4) || m.GetName() != "" {
			t.Fatalf("bookmark %s %+v", describe(bm), m)
		}
	})

	t.Run("sendInitialEvents=false from now", func(t *testing.T) {
		w, err := e.c.Watch(e.ctx, WatchOptions{SendInitialEvents: ptr(false)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		r := e.create(newPod("ns", "c", "n1", nil))
		if got := describe(next(t, w)); got != "ADDED ns/c@"+rv(r) {
			t.Fatalf("first event %s", got)
		}
	})

	t.Run("older than the window is 410", func(t *testing.T) {
		var last int64
		for i := range 10 {
			last = e.update(newPod("ns", "a", fmt.Sprintf("n%d", i), nil))
		}
		e.waitRev(last)
		_, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: rv(r1)})
		if !apierrors.IsResourceExpired(err) {
			t.Fatalf("err = %v, want 410 Expired", err)
		}
		// The newest revision outside... inside the window is fine.
		w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: rv(last - 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if got := describe(next(t, w)); got != "MODIFIED ns/a@"+rv(last) {
			t.Fatalf("got %s", got)
		}
	})
}

// An object that starts matching a watcher's selector is ADDED for it, one
// that stops matching is DELETED (with the event's revision).
func TestWatchSelectorTransitions(t *testing.T) {
	e := newEnv(t, nil)
	e.create(newPod("ns", "a", "n1", map[string]string{"app": "web", "tier": "x"}))
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision()), Label: labels.SelectorFromSet(labels.Set{"tier": "y"})})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r1 := e.update(newPod("ns", "a", "n1", map[string]string{"app": "web", "tier": "y"}))
	r2 := e.update(newPod("ns", "a", "n2", map[string]string{"app": "web", "tier": "y"}))
	r3 := e.update(newPod("ns", "a", "n2", map[string]string{"app": "web", "tier": "x"}))
	e.update(newPod("ns", "a", "n3", map[string]string{"app": "web", "tier": "x"})) // invisible
	r5 := e.delete("ns", "a")
	_ = r5
	r6 := e.create(newPod("ns", "b", "n3", map[string]string{"tier": "y"}))
	want := []string{"ADDED ns/a@" + formatRV(r1), "MODIFIED ns/a@" + formatRV(r2), "DELETED ns/a@" + formatRV(r3), "ADDED ns/b@" + formatRV(r6)}
	var got []string
	for range want {
		got = append(got, describe(next(t, w)))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A node's watcher is registered under its node and never even offered
// other nodes' pods; it still sees its pods arrive and leave.
func TestWatchIndexDispatch(t *testing.T) {
	e := newEnv(t, nil)
	watchNode := func(node string) *Watcher {
		w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision()), Field: fields.OneTermEqualSelector("spec.nodeName", node)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	wa, wb := watchNode("A"), watchNode("B")
	e.c.reg.mu.Lock()
	ka, kb := len(e.c.reg.mu.byKey[indexKey{"f:spec.nodeName", "A"}]), len(e.c.reg.mu.unindexed)
	e.c.reg.mu.Unlock()
	if ka != 1 || kb != 0 {
		t.Fatalf("registry: node A bucket %d, unindexed %d", ka, kb)
	}
	var offered atomic.Int64
	for range 20 {
		e.create(newPod("ns", fmt.Sprintf("b%d", offered.Add(1)), "B", nil))
	}
	r := e.create(newPod("ns", "a1", "A", nil)) // marker for A
	if got := describe(next(t, wa)); got != "ADDED ns/a1@"+formatRV(r) {
		t.Fatalf("node A watcher got %s first", got)
	}
	expectEmpty(t, wa)
	for i := range 20 {
		if ev := next(t, wb); evObj(ev).(*corev1.Pod).Spec.NodeName != "B" {
			t.Fatalf("event %d for B: %s", i, describe(ev))
		}
	}
	// Moving a pod from B to A: B sees it leave, A sees it arrive.
	r = e.update(newPod("ns", "b1", "A", nil))
	if got := describe(next(t, wa)); got != "ADDED ns/b1@"+formatRV(r) {
		t.Fatalf("A got %s", got)
	}
	if got := describe(next(t, wb)); got != "DELETED ns/b1@"+formatRV(r) {
		t.Fatalf("B got %s", got)
	}
}

// Quiet watchers get the current revision (learned from the store's
// progress, not only the cache's own keys) every BookmarkInterval.
func TestBookmarks(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BookmarkInterval = 10 * time.Second })
	e.create(newPod("ns", "a", "n1", nil))
	quiet, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision()), AllowBookmarks: true, Field: fields.OneTermEqualSelector("spec.nodeName", "n9")})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Stop()
	noBookmarks, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision()), Field: fields.OneTermEqualSelector("spec.nodeName", "n9")})
	if err != nil {
		t.Fatal(err)
	}
	defer noBookmarks.Stop()
	e.create(newPod("ns", "b", "n1", nil)) // not for n9
	other := e.writeOther("x")             // not for the cache at all

	// The fake clock runs ahead of the store's progress answer, so an
	// interval may pass without one: the cache then sends the revision it
	// has (onTick), and the store's comes with a later bookmark.
	var bm *Event
	waitFor(t, func() bool {
		select {
		case bm = <-quiet.ResultChan():
			if bm.Type != watch.Bookmark {
				t.Fatalf("got %s, want only bookmarks", describe(bm))
			}
			return bm.Revision >= other
		default:
			e.clock.Step(10 * time.Second)
			return false
		}
	}, "a bookmark at >= %d", other)
	if m, _ := meta.Accessor(evObj(bm)); m.GetResourceVersion() != formatRV(bm.Revision) {
		t.Fatalf("bookmark object rv %s", m.GetResourceVersion())
	}
	expectEmpty(t, noBookmarks)
	// A client resuming from the bookmark's revision is inside the window.
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(bm.Revision)})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
}

// A watcher with a deadline gets a bookmark at the cache's revision
// shortly before it, once, though the regular round is far off: its
// client's next watch then starts there.
func TestBookmarkBeforeDeadline(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BookmarkInterval = time.Hour })
	e.create(newPod("ns", "a", "n1", nil))
	start := e.c.Revision()
	field := fields.OneTermEqualSelector("spec.nodeName", "n9")
	now := e.clock.Now()
	watchUntil := func(deadline time.Time, bookmarks bool) *Watcher {
		w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(start), AllowBookmarks: bookmarks, Field: field, Deadline: deadline})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	soon := watchUntil(now.Add(10*time.Second), true)
	later := watchUntil(now.Add(time.Minute), true)
	none := watchUntil(time.Time{}, true)
	unasked := watchUntil(now.Add(10*time.Second), false)
	e.create(newPod("ns", "b", "n1", nil)) // not for n9
	rev := e.c.Revision()

	e.clock.Step(5 * time.Second) // 5 s before the deadline: not yet
	time.Sleep(50 * time.Millisecond)
	expectEmpty(t, soon)
	var bm *Event
	waitFor(t, func() bool {
		select {
		case bm = <-soon.ResultChan():
			return true
		default:
			e.clock.Step(time.Second)
			return false
		}
	}, "a bookmark before the deadline")
	if bm.Type != watch.Bookmark || bm.Revision < rev {
		t.Fatalf("got %s, want a bookmark at >= %d", describe(bm), rev)
	}
	if left := now.Add(10 * time.Second).Sub(e.clock.Now()); left < 0 || left > deadlineBookmarkLead {
		t.Errorf("bookmark %v before the deadline, want within %v", left, deadlineBookmarkLead)
	}
	e.create(newPod("ns", "c", "n1", nil))
	e.clock.Step(time.Second)
	time.Sleep(50 * time.Millisecond)
	expectEmpty(t, soon) // once
	expectEmpty(t, later)
	expectEmpty(t, none)
	expectEmpty(t, unasked)
}

// One change delivered to many watchers is one *Event, encoded once per
// format however many watchers (concurrently) ask.
func TestSerializeOnce(t *testing.T) {
	e := newEnv(t, nil)
	const n = 50
	var ws []*Watcher
	for i := range n {
		opts := WatchOptions{ResourceVersion: formatRV(e.c.Revision())}
		if i%2 == 0 {
			opts.Field = fields.OneTermEqualSelector("spec.nodeName", "n1")
		}
		w, err := e.c.Watch(e.ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	e.create(newPod("ns", "a", "n1", nil))
	var calls atomic.Int64
	var wg sync.WaitGroup
	events := make([]*Event, n)
	for i, w := range ws {
		ev := next(t, w)
		events[i] = ev
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, format := range []string{"json", "protobuf"} {
				if _, err := ev.Encoded(format, func() ([]byte, error) {
					calls.Add(1)
					return []byte(format), nil
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for _, ev := range events[1:] {
		if ev != events[0] {
			t.Fatal("watchers got different *Event values for one change")
		}
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("encode called %d times for %d watchers and 2 formats, want 2", got, n)
	}
}

// Events of a cache that keeps stored bytes carry them and decode only
// when asked, once for every watcher: a consumer that passes the bytes
// through never pays for a decode. A delete's object has the delete's
// revision.
func TestEventsDecodeOnDemand(t *testing.T) {
	var decodes atomic.Int64
	e := newEnv(t, func(cfg *Config) {
		dec := cfg.Decode
		cfg.Decode = func(kv storage.KeyValue) (runtime.Object, error) {
			decodes.Add(1)
			return dec(kv)
		}
	})
	ws := make([]*Watcher, 3)
	for i := range ws {
		w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision())})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws[i] = w
	}
	created := e.create(newPod("ns", "a", "n1", nil))
	deleted := e.delete("ns", "a")
	before := decodes.Load()
	for _, want := range []struct {
		typ string
		rev int64
	}{{"ADDED", created}, {"DELETED", deleted}} {
		var evs []*Event
		for _, w := range ws {
			evs = append(evs, next(t, w))
		}
		ev := evs[0]
		if string(ev.Type) != want.typ || ev.Revision != want.rev || ev.Stored == nil || ev.Stored.Key != podKey("ns", "a") {
			t.Fatalf("%s event: %s at %d, stored %v", want.typ, ev.Type, ev.Revision, ev.Stored != nil)
		}
		if got := decodes.Load(); got != before {
			t.Fatalf("%s: %d decodes before any consumer asked", want.typ, got-before)
		}
		for _, ev := range evs {
			p := evObj(ev).(*corev1.Pod)
			if p.Name != "a" || p.ResourceVersion != formatRV(want.rev) {
				t.Fatalf("%s object: %s at %s, want a at %d", want.typ, p.Name, p.ResourceVersion, want.rev)
			}
		}
		if got := decodes.Load(); got != before+1 {
			t.Fatalf("%s: %d decodes for %d watchers, want 1", want.typ, got-before, len(ws))
		}
		before++
	}
}

// A watcher that does not read is ended; dispatch to the others goes on.
func TestSlowWatcherDoesNotBlockOthers(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.WatcherBuffer = 4 })
	from := formatRV(e.c.Revision())
	slow, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	const n = 100 // more than the slow watcher's 40 (4 x 10 for a watcher of everything)
	done := make(chan []string)
	go func() {
		var got []string
		for ev := range fast.ResultChan() {
			got = append(got, describe(ev))
			if len(got) == n {
				break
			}
		}
		done <- got
	}()
	for i := range n {
		e.create(newPod("ns", fmt.Sprintf("p%02d", i), "n1", nil))
	}
	select {
	case got := <-done:
		if len(got) != n {
			t.Fatalf("fast watcher got %d events", len(got))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fast watcher starved")
	}
	// The slow one got at most its buffer, then its channel closed.
	count := 0
	for range slow.ResultChan() {
		count++
	}
	if count > 40 {
		t.Fatalf("slow watcher received %d events with a buffer of 40", count)
	}
}

// Stop ends every watcher and joins every goroutine; it is idempotent.
func TestStopEndsWatchers(t *testing.T) {
	e := newEnv(t, nil)
	e.create(newPod("ns", "a", "n1", nil))
	w, err := e.c.Watch(e.ctx, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.c.Stop()
	e.c.Stop()
	for range w.ResultChan() {
	}
	if _, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: "0"}); err == nil {
		t.Fatal("watch after stop succeeded")
	}
	if err := e.c.Start(e.ctx); err != ErrStopped {
		t.Fatalf("start after stop: %v", err)
	}
}

// With RetainObjects the cache hands out shared objects: a DELETED event
// must carry a copy with the delete's revision, never alter the original.
func TestRetainObjectsDeleteEvent(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RetainObjects = true })
	r1 := e.create(newPod("ns", "a", "n1", nil))
	e.waitRev(r1)
	before, err := e.c.Get(e.ctx, podKey("ns", "a"), "0")
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(r1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r2 := e.delete("ns", "a")
	if got := describe(next(t, w)); got != "DELETED ns/a@"+formatRV(r2) {
		t.Fatalf("got %s", got)
	}
	if rv := before.(*corev1.Pod).ResourceVersion; rv != formatRV(r1) {
		t.Fatalf("shared object's rv changed to %s", rv)
	}
	again, _ := e.c.Get(e.ctx, podKey("ns", "a"), "0")
	if again != nil {
		t.Fatal("deleted object still served")
	}
}

// Watchers are registered under the narrowest index value their selector
// pins: an indexed field, else an indexed label, else the namespace.
func TestWatchRegistrationBuckets(t *testing.T) {
	e := newEnv(t, nil)
	cases := []struct {
		opts WatchOptions
		want indexKey
		ok   bool
	}{
		{WatchOptions{Field: fields.OneTermEqualSelector("metadata.name", "node-7")}, indexKey{"name", "node-7"}, true}, // a kubelet's own Node
		{WatchOptions{Namespace: "a", Field: fields.SelectorFromSet(fields.Set{"metadata.name": "p", "spec.nodeName": "n1"})}, indexKey{"name", "p"}, true},
		{WatchOptions{Namespace: "a", Field: fields.OneTermEqualSelector("spec.nodeName", "n1")}, indexKey{"f:spec.nodeName", "n1"}, true},
		{WatchOptions{Label: labels.SelectorFromSet(labels.Set{"app": "web", "tier": "x"})}, indexKey{"l:app", "web"}, true},
		{WatchOptions{Namespace: "a", Label: labels.SelectorFromSet(labels.Set{"tier": "x"})}, indexKey{"ns", "a"}, true},
		{WatchOptions{Field: fields.OneTermEqualSelector("spec.nodeName", "")}, indexKey{"f:spec.nodeName", ""}, true}, // unscheduled pods
		{WatchOptions{Field: fields.OneTermNotEqualSelector("spec.nodeName", "")}, indexKey{}, false},
		{WatchOptions{Field: fields.OneTermEqualSelector("status.phase", "Running")}, indexKey{}, false}, // not indexed
	}
	for i, tc := range cases {
		tc.opts.ResourceVersion = "0"
		tc.opts.SendInitialEvents = ptr(false)
		w, err := e.c.Watch(e.ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if w.indexed != tc.ok || (tc.ok && w.key != tc.want) {
			t.Errorf("case %d: registered under %v (indexed %v), want %v (%v)", i, w.key, w.indexed, tc.want, tc.ok)
		}
		w.Stop()
	}
	if n := e.c.reg.count(); n != 0 {
		t.Fatalf("%d watchers left registered after Stop", n)
	}
	// An unscheduled pod reaches the "spec.nodeName=" watcher, then leaves
	// it when bound.
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision()), Field: fields.OneTermEqualSelector("spec.nodeName", "")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r1 := e.create(newPod("ns", "pending", "", nil))
	r2 := e.update(newPod("ns", "pending", "n1", nil))
	if got := describe(next(t, w)); got != "ADDED ns/pending@"+formatRV(r1) {
		t.Fatalf("got %s", got)
	}
	if got := describe(next(t, w)); got != "DELETED ns/pending@"+formatRV(r2) {
		t.Fatalf("got %s", got)
	}
}

// Stop joins every goroutine the cache started, including watchers stuck
// sending initial events to a client that does not read.
func TestStopJoinsGoroutines(t *testing.T) {
	e := &env{t: t, ctx: context.Background(), store: openStore(t), codec: newPodCodec(t), clock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	for i := range 30 {
		e.create(newPod("ns", fmt.Sprintf("p%02d", i), "n1", nil))
	}
	before := goleak.IgnoreCurrent() // the store's goroutines
	c, err := New(e.config(func(c *Config) { c.WatcherBuffer = 1 }))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(e.ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		// 30 initial events into a buffer of 10: the goroutine blocks.
		if _, err := c.Watch(e.ctx, WatchOptions{ResourceVersion: "0"}); err != nil {
			t.Fatal(err)
		}
	}
	c.Stop()
	// A joined goroutine has called wg.Done but may not have exited yet:
	// VerifyNone retries before calling it a leak.
	goleak.VerifyNone(t, before)
}
