package embedded

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// TestValueSeparation writes objects big enough for Pebble's blob files,
// flushes them out of the memtable, and reads every path back: Get, List,
// a watch replayed from the on-disk history (values and previous values),
// and all of it again after a reopen. With separation disabled no blob file
// may appear, which is what shows the option reaches Pebble.
func TestValueSeparation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		minSize   int
		wantBlobs bool
	}{
		{"default", 0, true},
		{"disabled", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{Dir: t.TempDir(), BlobValueMinSize: tc.minSize, WatchRingEvents: 4, ReplayChunk: 16}
			value := func(i, gen int) []byte {
				return bytes.Repeat([]byte(fmt.Sprintf("object %03d generation %d;", i, gen)), 40) // ~1 KB
			}
			const n = 100
			s, err := Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			revs := make([]int64, n)
			for i := range n {
				if revs[i], err = s.Create(ctx, fmt.Sprintf("/o/%03d", i), value(i, 0)); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n; i += 2 {
				if revs[i], err = s.Update(ctx, fmt.Sprintf("/o/%03d", i), value(i, 1), revs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
			blobs, _ := filepath.Glob(filepath.Join(opts.Dir, "*.blob"))
			if got := len(blobs) > 0; got != tc.wantBlobs {
				t.Fatalf("blob files after flush: %d, want some: %v", len(blobs), tc.wantBlobs)
			}

			check := func(s *Store) {
				t.Helper()
				want := func(i int) []byte { return value(i, 1-i%2) }
				for i := range n {
					kv, err := s.Get(ctx, fmt.Sprintf("/o/%03d", i))
					if err != nil || !bytes.Equal(kv.Value, want(i)) || kv.ModRevision != revs[i] {
						t.Fatalf("Get %d: rev %d (want %d), value ok %v, err %v", i, kv.ModRevision, revs[i], bytes.Equal(kv.Value, want(i)), err)
					}
				}
				kvs, _, err := s.List(ctx, "/o/")
				if err != nil || len(kvs) != n {
					t.Fatalf("List: %d items, %v", len(kvs), err)
				}
				for i, kv := range kvs {
					if !bytes.Equal(kv.Value, want(i)) {
						t.Fatalf("List item %d has the wrong value", i)
					}
				}
				w, err := s.Watch(ctx, "/o/", revs[1]-1) // from the second create on
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				for j := 1; j < n+n/2; j++ {
					var ev storage.Event
					select {
					case ev = <-w.Events():
					case <-time.After(testWait):
						t.Fatalf("no replayed event %d after %v", j, testWait)
					}
					i, gen, prev := j, 0, []byte(nil)
					if j >= n {
						i, gen, prev = 2*(j-n), 1, value(2*(j-n), 0)
					}
					if ev.Key != fmt.Sprintf("/o/%03d", i) || !bytes.Equal(ev.Value, value(i, gen)) || !bytes.Equal(ev.PrevValue, prev) {
						t.Fatalf("replayed event %d: key %q rev %d, value ok %v, prev ok %v", j, ev.Key, ev.Revision,
							bytes.Equal(ev.Value, value(i, gen)), bytes.Equal(ev.PrevValue, prev))
					}
				}
			}
			check(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			check(openTest(t, opts))
		})
	}
}
