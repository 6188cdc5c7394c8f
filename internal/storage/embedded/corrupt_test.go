package embedded

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// rewrite opens the closed store's Pebble database directly and replaces the
// record under dbKey with f(record).
func rewrite(t *testing.T, dir string, dbKey []byte, f func([]byte) []byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{discardLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get(dbKey)
	if err != nil {
		t.Fatalf("reading %q: %v", dbKey, err)
	}
	rec := f(append([]byte(nil), v...))
	closer.Close()
	if err := db.Set(dbKey, rec, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func flipLast(b []byte) []byte { b[len(b)-1] ^= 0x40; return b }

// TestCorruption flips and truncates stored bytes behind the store's back:
// every read path must return ErrCorrupt naming the key and revision, and
// never serve the damaged value or panic.
func TestCorruption(t *testing.T) {
	ctx := context.Background()
	// The store holds /ns/before, then /ns/victim created at rev and
	// updated at rev+1 (to "precious value").
	valueDamaged := func(t *testing.T, s *Store, rev int64, what string) {
		cur := strconv.FormatInt(rev+1, 10)
		checkCorrupt(t, "Get", getErr(s.Get(ctx, "/ns/victim")), "/ns/victim", cur, what)
		_, _, err := s.List(ctx, "/ns/")
		checkCorrupt(t, "List", err, "/ns/victim", cur, what)
		// Delete must return the old value, which it cannot read.
		_, _, err = s.Delete(ctx, "/ns/victim", rev+1)
		checkCorrupt(t, "Delete", err, "/ns/victim", cur, what)
		if _, err := s.Get(ctx, "/ns/before"); err != nil {
			t.Fatalf("undamaged key unreadable: %v", err)
		}
		// History damage surfaces through a watch replaying it.
		checkWatchCorrupt(t, s, rev-1, rev, cur, what)
		// A CAS update checks the (intact) key index, not the damaged
		// value, and replaces the value: that is how a damaged object is
		// repaired.
		w, err := s.Watch(ctx, "/ns/", rev+1)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		repaired, err := s.Update(ctx, "/ns/victim", []byte("repaired"), rev+1)
		if err != nil {
			t.Fatalf("Update over a damaged value: %v", err)
		}
		if kv, err := s.Get(ctx, "/ns/victim"); err != nil || string(kv.Value) != "repaired" {
			t.Fatalf("after repair: %q, %v", kv.Value, err)
		}
		// Its previous value is unknown, and says so (storage.Event): no
		// value and no revision, live and in its history record.
		if ev := <-w.Events(); ev.Revision != repaired || ev.PrevValue != nil || ev.PrevModRevision != 0 {
			t.Fatalf("repair event %+v, want revision %d without a previous value", ev, repaired)
		}
		v, closer, err := s.db.Get(historyKey(repaired))
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		if ev, err := decodeHistory(historyKey(repaired), v); err != nil || ev.PrevModRevision != 0 {
			t.Fatalf("repair's history record: %+v, %v; want no previous revision", ev, err)
		}
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string, rev int64)
		check  func(t *testing.T, s *Store, rev int64, what string)
	}{
		{"value bit flip", func(t *testing.T, dir string, rev int64) { rewrite(t, dir, historyKey(rev+1), flipLast) }, valueDamaged},
		{"value truncated", func(t *testing.T, dir string, rev int64) {
			rewrite(t, dir, historyKey(rev+1), func(b []byte) []byte { return b[:3] })
		}, valueDamaged},
		{"value bad key length", func(t *testing.T, dir string, rev int64) {
			rewrite(t, dir, historyKey(rev+1), func(b []byte) []byte {
				b[historyHeader+8] = 0x7f // longer than the record, checksum fixed up
				return reseal(historyKey(rev+1), b)
			})
		}, valueDamaged},
		{"previous value bit flip", func(t *testing.T, dir string, rev int64) { rewrite(t, dir, historyKey(rev), flipLast) },
			func(t *testing.T, s *Store, rev int64, what string) {
				if kv, err := s.Get(ctx, "/ns/victim"); err != nil || string(kv.Value) != "precious value" {
					t.Fatalf("current value: %q, %v", kv.Value, err)
				}
				// The update's event carries the damaged previous value.
				checkWatchCorrupt(t, s, rev, rev, strconv.FormatInt(rev, 10), what)
			}},
		{"key-log bit flip", func(t *testing.T, dir string, rev int64) { rewrite(t, dir, keyLogKey(rev+1), flipLast) },
			func(t *testing.T, s *Store, rev int64, what string) {
				// Open read the write's key, type and creation from its
				// history record instead.
				if kv, err := s.Get(ctx, "/ns/victim"); err != nil || string(kv.Value) != "precious value" || kv.ModRevision != rev+1 || kv.CreateRevision != rev {
					t.Fatalf("Get: %+v, %v", kv, err)
				}
				if _, err := s.Update(ctx, "/ns/victim", []byte("next"), rev+1); err != nil {
					t.Fatalf("Update: %v", err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(ctx, Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(ctx, "/ns/before", []byte("fine")); err != nil {
				t.Fatal(err)
			}
			rev, err := s.Create(ctx, "/ns/victim", []byte("first value"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(ctx, "/ns/victim", []byte("precious value"), rev); err != nil {
				t.Fatal(err)
			}
			s.Close()
			tc.damage(t, dir, rev)
			tc.check(t, openTest(t, Options{Dir: dir}), rev, tc.name)
		})
	}
}

// checkWatchCorrupt: a watch replaying history after revision from ends
// with ErrCorrupt naming revision badRev, having served nothing after rev
// (the victim's update, whose value or previous value is damaged).
func checkWatchCorrupt(t *testing.T, s *Store, from, rev int64, badRev, what string) {
	t.Helper()
	w, err := s.Watch(context.Background(), "/ns/", from)
	if err != nil {
		t.Fatal(err)
	}
	for ev := range w.Events() {
		if ev.Revision > rev {
			t.Fatalf("damaged history served: %+v", ev)
		}
	}
	checkCorrupt(t, "Watch", w.Err(), "", badRev, what)
}

// TestCorruptKeyLog: a write whose key-log and history records are both
// damaged has an unknown key. Open refuses the store, naming the revision,
// unless a later write replaced it (its retire record says so).
func TestCorruptKeyLog(t *testing.T) {
	ctx := context.Background()
	for _, replaced := range []bool{false, true} {
		t.Run("replaced="+strconv.FormatBool(replaced), func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, Options{Dir: dir})
			rev, err := s.Create(ctx, "/ns/victim", []byte("v1"))
			if err != nil {
				t.Fatal(err)
			}
			if replaced {
				if _, err := s.Update(ctx, "/ns/victim", []byte("v2"), rev); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			rewrite(t, dir, keyLogKey(rev), flipLast)
			rewrite(t, dir, historyKey(rev), flipLast)
			s, err = Open(ctx, Options{Dir: dir})
			if !replaced {
				if err == nil {
					s.Close()
				}
				checkCorrupt(t, "Open", err, "", strconv.FormatInt(rev, 10), "both records damaged")
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if kv, err := s.Get(ctx, "/ns/victim"); err != nil || string(kv.Value) != "v2" {
				t.Fatalf("Get: %+v, %v", kv, err)
			}
		})
	}
}

// TestCorruptKeyLogCompacted: a damaged key-log record of a delete whose
// history compaction has deleted must not bring the deleted key back.
func TestCorruptKeyLogCompacted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir, RetireInterval: -1})
	rev, err := s.Create(ctx, "/ns/gone", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, rev, err = s.Delete(ctx, "/ns/gone", rev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/ns/kept", []byte("k")); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rewrite(t, dir, keyLogKey(rev), flipLast)
	s = openTest(t, Options{Dir: dir})
	if _, err := s.Get(ctx, "/ns/gone"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of the deleted key: %v, want ErrNotFound", err)
	}
	if list, _, err := s.List(ctx, "/ns/"); err != nil || len(list) != 1 || list[0].Key != "/ns/kept" {
		t.Fatalf("List: %+v, %v", list, err)
	}
}

// TestCorruptMeta: a damaged revision counter refuses to open rather than
// reusing revisions.
func TestCorruptMeta(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/k", nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rewrite(t, dir, []byte(metaCurrentKey), flipLast)
	if s, err := Open(ctx, Options{Dir: dir}); !errors.Is(err, storage.ErrCorrupt) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open with a corrupt revision counter: %v, want ErrCorrupt", err)
	}
}

// reseal recomputes a record's checksum, for damage that must get past it.
func reseal(dbKey, rec []byte) []byte {
	var c [4]byte
	sum := checksum(dbKey, rec[4:])
	c[0], c[1], c[2], c[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	copy(rec, c[:])
	return rec
}

func getErr(_ storage.KeyValue, err error) error { return err }

func checkCorrupt(t *testing.T, op string, err error, key, rev, what string) {
	t.Helper()
	if !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("%s after %s: %v, want ErrCorrupt", op, what, err)
	}
	if !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), rev) {
		t.Fatalf("%s error %q does not name key %q and revision %s", op, err, key, rev)
	}
}

// TestWriteFailure injects a full disk under the WAL: the write fails with a
// clear error, later writes are refused, reads keep working, Health reports
// the problem, and a reopen (disk fixed) recovers a consistent store.
func TestWriteFailure(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, full := openFullable(t, dir)
	defer s.Close()
	good, err := s.Create(ctx, "/good", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	full.On()
	_, err = s.Create(ctx, "/doomed", []byte("v"))
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %v, want an error wrapping ENOSPC", err)
	}
	t.Logf("write error: %v", err)
	if _, err := s.Create(ctx, "/later", []byte("v")); err == nil {
		t.Fatal("write after a failed commit succeeded")
	}
	if err := s.Health(ctx); err == nil {
		t.Fatal("Health is nil after a failed write")
	}
	kv, err := s.Get(ctx, "/good")
	if err != nil || kv.ModRevision != good {
		t.Fatalf("read after write failure: %+v, %v", kv, err)
	}
	if _, _, err := s.List(ctx, "/"); err != nil {
		t.Fatalf("list after write failure: %v", err)
	}
	if rev, _ := s.CurrentRevision(ctx); rev != good {
		t.Fatalf("CurrentRevision %d after failed write, want %d", rev, good)
	}
	full.Off()
	s.Close()
	s = openTest(t, Options{Dir: dir})
	if _, err := s.Get(ctx, "/good"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
	rev, err := s.Create(ctx, "/after", nil)
	if err != nil || rev <= good {
		t.Fatalf("write after reopen: rev %d, %v", rev, err)
	}
}

// TestWriteFailureUnderLoad fills the disk while 32 writers keep the
// pipelined writer busy (a batch being synced and the next one applied): no
// write is acknowledged after the failure, the acknowledged revisions are
// exactly base+1..CurrentRevision (no gaps), and after a reopen every
// acknowledged write is there.
//
// The disk fills after a fixed number of writes, not after a time, so that it
// happens before Pebble's first memtable (256 KiB) fills whatever the
// machine's speed: 200 small writes take ~60 KiB of it. A memtable rotation
// would spoil the test twice over. After a failed WAL write it is fatal in
// Pebble (rotateWAL panics on the closing log's sticky error with DB.mu
// released, and the runtime aborts on the unlock that follows; the process
// dies with nothing acknowledged lost, the kill test's case). And a rotation
// that recycles an old log gets a file errorfs does not wrap, whose writes
// never fail.
func TestWriteFailureUnderLoad(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, full := openFullable(t, dir)
	defer s.Close()
	base, _ := s.CurrentRevision(ctx)
	const fillAfter = 200
	var (
		mu      sync.Mutex
		acked   = map[int64]string{}
		failed  atomic.Bool
		wg      sync.WaitGroup
		filling = make(chan struct{})
	)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := "/w" + strconv.Itoa(w) + "/" + strconv.Itoa(i)
				rev, err := s.Create(ctx, key, []byte(key))
				if err != nil {
					failed.Store(true)
					return
				}
				if failed.Load() && s.Health(ctx) != nil {
					// Acknowledged after another write saw the failure:
					// allowed only if its batch was durable before it.
					if cur, _ := s.CurrentRevision(ctx); rev > cur {
						t.Errorf("write %q acknowledged at revision %d above CurrentRevision %d", key, rev, cur)
					}
				}
				mu.Lock()
				acked[rev] = key
				if len(acked) == fillAfter {
					close(filling)
				}
				mu.Unlock()
			}
		}()
	}
	<-filling
	if n := s.db.Metrics().Flush.Count; n != 0 {
		t.Fatalf("%d memtable flushes before the disk filled, want none (see above)", n)
	}
	full.On()
	wg.Wait()
	cur, _ := s.CurrentRevision(ctx)
	if len(acked) == 0 {
		t.Fatal("no write acknowledged before the failure")
	}
	for r := base + 1; r <= cur; r++ {
		if _, ok := acked[r]; !ok {
			t.Fatalf("revision %d (<= CurrentRevision %d) was not acknowledged", r, cur)
		}
	}
	if int64(len(acked)) != cur-base {
		t.Fatalf("%d writes acknowledged, CurrentRevision %d, base %d", len(acked), cur, base)
	}
	full.Off()
	s.Close()
	s = openTest(t, Options{Dir: dir})
	for rev, key := range acked {
		kv, err := s.Get(ctx, key)
		if err != nil || kv.ModRevision != rev {
			t.Fatalf("after reopen, %q: %+v, %v; acknowledged at revision %d", key, kv, err, rev)
		}
	}
	t.Logf("%d writes acknowledged before the disk filled", len(acked))
}

// TestCompactFailure fills the disk before a compaction: Compact returns an
// error wrapping ENOSPC instead of letting Pebble's fatal commit error take
// the process down, the store turns read-only, and reads keep working.
func TestCompactFailure(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, full := openFullable(t, dir)
	defer s.Close()
	last, err := s.Create(ctx, "/k", []byte("0"))
	for i := 1; i < 10 && err == nil; i++ {
		last, err = s.Update(ctx, "/k", []byte(strconv.Itoa(i)), last)
	}
	if err != nil {
		t.Fatal(err)
	}
	full.On()
	err = s.Compact(ctx, last-1)
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("compact on a full disk: %v, want an error wrapping ENOSPC", err)
	}
	if err := s.Health(ctx); err == nil {
		t.Fatal("Health is nil after a failed compaction")
	}
	if _, err := s.Update(ctx, "/k", []byte("x"), last); err == nil {
		t.Fatal("write after a failed compaction succeeded")
	}
	if err := s.Compact(ctx, last-1); err == nil {
		t.Fatal("second compaction after a failure succeeded")
	}
	if kv, err := s.Get(ctx, "/k"); err != nil || kv.ModRevision != last {
		t.Fatalf("read after failed compaction: %+v, %v", kv, err)
	}
	full.Off()
	s.Close()
	s = openTest(t, Options{Dir: dir})
	if kv, err := s.Get(ctx, "/k"); err != nil || kv.ModRevision != last {
		t.Fatalf("after reopen: %+v, %v", kv, err)
	}
}

// openFullable opens a store in dir whose WAL writes fail with ENOSPC while
// the returned toggle is on: a disk that fills up.
func openFullable(t *testing.T, dir string) (*Store, *errorfs.Toggle) {
	t.Helper()
	enospc := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".log") {
			return syscall.ENOSPC
		}
		return nil
	})
	full := &errorfs.Toggle{Injector: enospc}
	s, err := Open(context.Background(), Options{Dir: dir, FS: errorfs.Wrap(vfs.Default, full), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s, full
}
