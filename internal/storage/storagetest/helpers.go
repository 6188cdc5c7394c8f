package storagetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
)

func mustCreate(t *testing.T, s storage.Store, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(testCtx(t), key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

func mustUpdate(t *testing.T, s storage.Store, key, value string, expected int64) int64 {
	t.Helper()
	rev, err := s.Update(testCtx(t), key, []byte(value), expected)
	if err != nil {
		t.Fatalf("Update(%q, expected %d): %v", key, expected, err)
	}
	return rev
}

func mustGet(t *testing.T, s storage.Store, key string) storage.KeyValue {
	t.Helper()
	kv, err := s.Get(testCtx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return kv
}

func mustRev(t *testing.T, s storage.Store) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(testCtx(t))
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

func mustWatch(t *testing.T, s storage.Store, prefix string, from int64) storage.Watcher {
	t.Helper()
	w, err := s.Watch(testCtx(t), prefix, from)
	if err != nil {
		t.Fatalf("Watch(%q, %d): %v", prefix, from, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func expectKV(t *testing.T, got storage.KeyValue, key, value string, mod, create int64) {
	t.Helper()
	if got.Key != key || !bytes.Equal(got.Value, []byte(value)) || got.ModRevision != mod || got.CreateRevision != create {
		t.Fatalf("got {%q %q mod=%d create=%d}, want {%q %q mod=%d create=%d}",
			got.Key, got.Value, got.ModRevision, got.CreateRevision, key, value, mod, create)
	}
}

func expectErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want one wrapping %v", err, target)
	}
}

// next returns the next event from w, failing the test after waitTimeout or
// if the watch ends.
func next(t *testing.T, w storage.Watcher) storage.Event {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended early: %v", w.Err())
		}
		return ev
	case <-timer.C:
		t.Fatalf("no event within %v", waitTimeout)
	}
	panic("unreachable")
}

// expectEvent checks the next event's type, key, value and revision.
func expectEvent(t *testing.T, w storage.Watcher, typ storage.EventType, key, value string, rev int64) storage.Event {
	t.Helper()
	ev := next(t, w)
	if ev.Type != typ || ev.Key != key || ev.Revision != rev || !bytes.Equal(ev.Value, []byte(value)) {
		t.Fatalf("got event %v %q %q rev=%d, want %v %q %q rev=%d", ev.Type, ev.Key, ev.Value, ev.Revision, typ, key, value, rev)
	}
	return ev
}

// expectQuiet checks that w delivers nothing more up to a progress
// notification: it requests progress and requires the very next event to be
// EventProgress at or after rev. This proves absence without sleeping.
func expectQuiet(t *testing.T, w storage.Watcher, rev int64) {
	t.Helper()
	w.RequestProgress()
	ev := next(t, w)
	if ev.Type != storage.EventProgress {
		t.Fatalf("got unexpected event %v %q rev=%d, want only a progress notification", ev.Type, ev.Key, ev.Revision)
	}
	if ev.Revision < rev {
		t.Fatalf("progress at revision %d, want >= %d", ev.Revision, rev)
	}
}

// waitClosed waits for w's channel to close, discarding events.
func waitClosed(t *testing.T, w storage.Watcher) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatalf("watch did not end within %v", waitTimeout)
		}
	}
}

// cancelledCtx returns an already-cancelled context.
func cancelledCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
