package embedded

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// TestSharedHistoryReplay: watchers of different prefixes replaying the
// same history from disk at once each get exactly their own events, with
// their previous values, while every chunk of it is read from disk once.
func TestSharedHistoryReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir, ReplayChunk: 16})
	if err != nil {
		t.Fatal(err)
	}
	prefixes := []string{"/a/", "/b/", "/c/", "/d/", "/e/"}
	// want[prefix] is what a watch from revision from must replay.
	const from = 10
	want := map[string][]string{}
	var rev int64
	for i := range 60 {
		p := prefixes[i%len(prefixes)]
		key := fmt.Sprintf("%sk%d", p, i%7)
		var what string
		cur, err := s.Get(ctx, key)
		switch {
		case err == nil && i%3 == 0:
			if _, rev, err = s.Delete(ctx, key, 0); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("DELETE %s prev=%s", key, cur.Value)
		case err == nil:
			if rev, err = s.Update(ctx, key, fmt.Appendf(nil, "v%d", i), cur.ModRevision); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("PUT %s=v%d prev=%s", key, i, cur.Value)
		default:
			if rev, err = s.Create(ctx, key, fmt.Appendf(nil, "v%d", i)); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("PUT %s=v%d prev=", key, i)
		}
		if rev > from {
			want[p] = append(want[p], fmt.Sprintf("%d %s", rev, what))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened, the ring is empty: every watch replays from disk.
	s = openTest(t, Options{Dir: dir, ReplayChunk: 16})

	var wg sync.WaitGroup
	got := make(map[string][]string)
	var mu sync.Mutex
	for _, p := range prefixes {
		for range 3 {
			wg.Go(func() {
				w, err := s.Watch(ctx, p, from)
				if err != nil {
					t.Error(err)
					return
				}
				defer w.Stop()
				var evs []string
				for len(evs) < len(want[p]) {
					ev := <-w.Events()
					switch ev.Type {
					case storage.EventPut:
						evs = append(evs, fmt.Sprintf("%d PUT %s=%s prev=%s", ev.Revision, ev.Key, ev.Value, ev.PrevValue))
					case storage.EventDelete:
						evs = append(evs, fmt.Sprintf("%d DELETE %s prev=%s", ev.Revision, ev.Key, ev.PrevValue))
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if prev, ok := got[p]; ok && fmt.Sprint(prev) != fmt.Sprint(evs) {
					t.Errorf("two watchers of %s replayed differently:\n%v\n%v", p, prev, evs)
				}
				got[p] = evs
			})
		}
	}
	wg.Wait()
	for _, p := range prefixes {
		if fmt.Sprint(got[p]) != fmt.Sprint(want[p]) {
			t.Errorf("replay of %s:\ngot  %v\nwant %v", p, got[p], want[p])
		}
	}
	// Revisions 11..60 span chunks (0,16], (16,32], (32,48], (48,64]; a
	// chunk read again after history ended in it (the last one, while
	// stragglers catch up) is all the slack there is.
	if n := s.history.reads.Load(); n > 5 {
		t.Errorf("15 watchers read %d chunks from disk; want each of the 4 read once (5 at most)", n)
	}
}
