package cache

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

// wantUndecodable checks err is a 500 naming key and rev.
func wantUndecodable(t *testing.T, what string, err error, key string, rev int64) {
	t.Helper()
	if !apierrors.IsInternalError(err) {
		t.Fatalf("%s: %v, want a 500 InternalError", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, key) || !strings.Contains(msg, "revision "+strconv.FormatInt(rev, 10)) {
		t.Fatalf("%s: %q does not name key %s and revision %d", what, msg, key, rev)
	}
}

// TestUndecodableValue: a value the server did not write (garbage under a
// pod key) is never served as the object's previous version nor dropped in
// silence. Reads of it fail with a 500 naming the key and revision, watchers
// that would see it end with that error, reads that cannot include it are
// unaffected, and rewriting or deleting the key heals the cache.
func TestUndecodableValue(t *testing.T) {
	e := newEnv(t, nil)
	good := newPod("ns", "p", "n1", map[string]string{"app": "a"})
	e.create(good)
	e.waitRev(e.create(newPod("ns", "other", "n2", map[string]string{"app": "b"})))
	all, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: strconv.FormatInt(e.c.Revision(), 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()
	byApp, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: strconv.FormatInt(e.c.Revision(), 10), Label: labels.SelectorFromSet(labels.Set{"app": "a"})})
	if err != nil {
		t.Fatal(err)
	}
	defer byApp.Stop()

	key := podKey("ns", "p")
	cur, err := e.store.Get(e.ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := e.store.Update(e.ctx, key, []byte("not a protobuf object"), cur.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	e.waitRev(bad)

	_, err = e.c.Get(e.ctx, key, "")
	wantUndecodable(t, "Get", err, key, bad)
	_, err = e.c.List(e.ctx, ListOptions{}, func(runtime.Object) error { return nil })
	wantUndecodable(t, "List", err, key, bad)
	_, err = e.c.ListStored(e.ctx, ListOptions{Namespace: "ns"}, func(Stored) error { return nil })
	wantUndecodable(t, "ListStored", err, key, bad)
	// Selectors that found the last good version find it still, and fail,
	// rather than list it as gone (a kubelet would kill the pod).
	_, err = e.c.List(e.ctx, ListOptions{Label: labels.SelectorFromSet(labels.Set{"app": "a"})}, func(runtime.Object) error { return nil })
	wantUndecodable(t, "List app=a", err, key, bad)
	_, err = e.c.List(e.ctx, ListOptions{Field: fields.OneTermEqualSelector("spec.nodeName", "n1")}, func(runtime.Object) error { return nil })
	wantUndecodable(t, "List spec.nodeName=n1", err, key, bad)
	n := 0
	if _, err := e.c.List(e.ctx, ListOptions{Label: labels.SelectorFromSet(labels.Set{"app": "b"})}, func(runtime.Object) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("a list that cannot include the object: %d items, %v", n, err)
	}
	for name, w := range map[string]*Watcher{"unfiltered": all, "app=a (matched the last good version)": byApp} {
		ev := next(t, w)
		st, ok := evObj(ev).(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != 500 || !strings.Contains(st.Message, key) {
			t.Fatalf("%s watcher: %s %#v, want a 500 error event naming %s", name, ev.Type, evObj(ev), key)
		}
		if _, open := <-w.ResultChan(); open {
			t.Fatalf("%s watcher still open after its error event", name)
		}
	}

	healed := e.update(good)
	e.waitRev(healed)
	if obj, err := e.c.Get(e.ctx, key, ""); err != nil || obj.(metav1.Object).GetResourceVersion() != strconv.FormatInt(healed, 10) {
		t.Fatalf("Get after a good rewrite: %v", err)
	}
}

// TestUndecodableAtStart: an undecodable value already in the store when the
// cache starts is held the same way, and deleting it removes it.
func TestUndecodableAtStart(t *testing.T) {
	e := &env{t: t, store: openStore(t), codec: newPodCodec(t), clock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.ctx = ctx
	key := podKey("ns", "junk")
	rev, err := e.store.Create(ctx, key, []byte{0x6b, 0x38, 0x73, 0x00, 0xff})
	if err != nil {
		t.Fatal(err)
	}
	e.startCache(nil)
	_, err = e.c.Get(ctx, key, "0")
	wantUndecodable(t, "Get", err, key, rev)
	// A watch with initial events ends with the error instead of skipping.
	w, err := e.c.Watch(ctx, WatchOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Type != watch.Error {
		t.Fatalf("initial events: %s, want an error event", ev.Type)
	}
	// Deleting it is the repair: a watcher sees a DELETED stub.
	later, err := e.c.Watch(ctx, WatchOptions{ResourceVersion: strconv.FormatInt(e.c.Revision(), 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Stop()
	del := e.delete("ns", "junk")
	e.waitRev(del)
	ev := next(t, later)
	if p, ok := evObj(ev).(*corev1.Pod); ev.Type != watch.Deleted || !ok || p.Namespace != "ns" || p.Name != "junk" || p.ResourceVersion != strconv.FormatInt(del, 10) {
		t.Fatalf("delete of an undecodable object: %s %#v, want DELETED ns/junk at %d", ev.Type, evObj(ev), del)
	}
	if _, err := e.c.Get(ctx, key, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delete: %v, want not found", err)
	}
}
