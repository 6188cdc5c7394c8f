package storagetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

func testGetMissing(t *testing.T, s storage.Store) {
	_, err := s.Get(testCtx(t), "/pods/default/missing")
	expectErr(t, err, storage.ErrNotFound)
}

func testCreateGet(t *testing.T, s storage.Store) {
	rev := mustCreate(t, s, "/pods/default/a", "v1")
	if rev <= 0 {
		t.Fatalf("Create returned revision %d, want > 0", rev)
	}
	expectKV(t, mustGet(t, s, "/pods/default/a"), "/pods/default/a", "v1", rev, rev)
	if cur := mustRev(t, s); cur != rev {
		t.Fatalf("CurrentRevision = %d after a write at %d", cur, rev)
	}
}

func testCreateExists(t *testing.T, s storage.Store) {
	rev := mustCreate(t, s, "/k", "v1")
	_, err := s.Create(testCtx(t), "/k", []byte("v2"))
	expectErr(t, err, storage.ErrExists)
	expectKV(t, mustGet(t, s, "/k"), "/k", "v1", rev, rev)
}

func testUpdateCAS(t *testing.T, s storage.Store) {
	r1 := mustCreate(t, s, "/k", "v1")
	r2 := mustUpdate(t, s, "/k", "v2", r1)
	if r2 <= r1 {
		t.Fatalf("update revision %d not after create revision %d", r2, r1)
	}
	expectKV(t, mustGet(t, s, "/k"), "/k", "v2", r2, r1)
	r3 := mustUpdate(t, s, "/k", "v3", r2)
	expectKV(t, mustGet(t, s, "/k"), "/k", "v3", r3, r1)
}

func testUpdateConflict(t *testing.T, s storage.Store) {
	r1 := mustCreate(t, s, "/k", "v1")
	r2 := mustUpdate(t, s, "/k", "v2", r1)
	_, err := s.Update(testCtx(t), "/k", []byte("stale"), r1)
	expectErr(t, err, storage.ErrConflict)
	var ce *storage.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("conflict error %v is not a *storage.ConflictError", err)
	}
	if ce.Key != "/k" || ce.Expected != r1 {
		t.Fatalf("ConflictError{Key %q, Expected %d}, want {%q, %d}", ce.Key, ce.Expected, "/k", r1)
	}
	expectKV(t, ce.Current, "/k", "v2", r2, r1)
	expectKV(t, mustGet(t, s, "/k"), "/k", "v2", r2, r1)
}

// testUpdateExpectedZero: 0 is "unconditional" only for Delete; an Update
// expecting revision 0 cannot match any stored revision.
func testUpdateExpectedZero(t *testing.T, s storage.Store) {
	r := mustCreate(t, s, "/k", "v1")
	_, err := s.Update(testCtx(t), "/k", []byte("v2"), 0)
	expectErr(t, err, storage.ErrConflict)
	expectKV(t, mustGet(t, s, "/k"), "/k", "v1", r, r)
}

func testUpdateMissing(t *testing.T, s storage.Store) {
	r := mustCreate(t, s, "/other", "x")
	_, err := s.Update(testCtx(t), "/k", []byte("v"), r)
	expectErr(t, err, storage.ErrNotFound)
	_, err = s.Get(testCtx(t), "/k")
	expectErr(t, err, storage.ErrNotFound)
}

func testDeleteCAS(t *testing.T, s storage.Store) {
	r1 := mustCreate(t, s, "/k", "v1")
	r2 := mustUpdate(t, s, "/k", "v2", r1)
	prev, r3, err := s.Delete(testCtx(t), "/k", r2)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if r3 <= r2 {
		t.Fatalf("delete revision %d not after %d", r3, r2)
	}
	expectKV(t, prev, "/k", "v2", r2, r1)
	_, err = s.Get(testCtx(t), "/k")
	expectErr(t, err, storage.ErrNotFound)
	if cur := mustRev(t, s); cur != r3 {
		t.Fatalf("CurrentRevision %d after delete at %d", cur, r3)
	}
}

func testDeleteConflict(t *testing.T, s storage.Store) {
	r1 := mustCreate(t, s, "/k", "v1")
	r2 := mustUpdate(t, s, "/k", "v2", r1)
	_, _, err := s.Delete(testCtx(t), "/k", r1)
	expectErr(t, err, storage.ErrConflict)
	var ce *storage.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("conflict error %v is not a *storage.ConflictError", err)
	}
	expectKV(t, ce.Current, "/k", "v2", r2, r1)
	expectKV(t, mustGet(t, s, "/k"), "/k", "v2", r2, r1)
}

func testDeleteMissing(t *testing.T, s storage.Store) {
	_, _, err := s.Delete(testCtx(t), "/k", 0)
	expectErr(t, err, storage.ErrNotFound)
	r := mustCreate(t, s, "/other", "x")
	_, _, err = s.Delete(testCtx(t), "/k", r)
	expectErr(t, err, storage.ErrNotFound)
}

func testDeleteUnconditional(t *testing.T, s storage.Store) {
	r1 := mustCreate(t, s, "/k", "v1")
	mustUpdate(t, s, "/k", "v2", r1)
	prev, rd, err := s.Delete(testCtx(t), "/k", 0)
	if err != nil {
		t.Fatalf("unconditional Delete: %v", err)
	}
	if string(prev.Value) != "v2" || rd <= prev.ModRevision {
		t.Fatalf("Delete returned prev %q mod=%d and revision %d", prev.Value, prev.ModRevision, rd)
	}
	_, err = s.Get(testCtx(t), "/k")
	expectErr(t, err, storage.ErrNotFound)
}

func testRecreateAfterDelete(t *testing.T, s storage.Store) {
	mustCreate(t, s, "/k", "v1")
	if _, _, err := s.Delete(testCtx(t), "/k", 0); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	r := mustCreate(t, s, "/k", "v2")
	// CreateRevision is the revision of the latest creation.
	expectKV(t, mustGet(t, s, "/k"), "/k", "v2", r, r)
}

func testValuesAreCopies(t *testing.T, s storage.Store) {
	in := []byte("original")
	r, err := s.Create(testCtx(t), "/k", in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	copy(in, "XXXXXXXX") // the store must not alias the caller's slice
	kv := mustGet(t, s, "/k")
	expectKV(t, kv, "/k", "original", r, r)
	copy(kv.Value, "YYYYYYYY") // nor hand out its own memory
	expectKV(t, mustGet(t, s, "/k"), "/k", "original", r, r)
	list, _, err := s.List(testCtx(t), "/")
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %d items, %v", len(list), err)
	}
	copy(list[0].Value, "ZZZZZZZZ")
	expectKV(t, mustGet(t, s, "/k"), "/k", "original", r, r)
}

func testEmptyValue(t *testing.T, s storage.Store) {
	r := mustCreate(t, s, "/k", "")
	expectKV(t, mustGet(t, s, "/k"), "/k", "", r, r)
}

func testRevisionsIncreasing(t *testing.T, s storage.Store) {
	last := mustRev(t, s)
	check := func(op string, rev int64) {
		t.Helper()
		if rev <= last {
			t.Fatalf("%s got revision %d, not after %d", op, rev, last)
		}
		if cur := mustRev(t, s); cur != rev {
			t.Fatalf("CurrentRevision %d after %s at %d", cur, op, rev)
		}
		last = rev
	}
	for i := range 5 {
		k := fmt.Sprintf("/k%d", i)
		check("create", mustCreate(t, s, k, "v"))
		check("update", mustUpdate(t, s, k, "w", last))
		_, rd, err := s.Delete(testCtx(t), k, last)
		if err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
		check("delete", rd)
	}
}

func testFailedWritesNoRevision(t *testing.T, s storage.Store) {
	r := mustCreate(t, s, "/k", "v")
	ctx := testCtx(t)
	if _, err := s.Create(ctx, "/k", nil); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("Create existing: %v", err)
	}
	if _, err := s.Update(ctx, "/k", nil, r+100); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Update stale: %v", err)
	}
	if _, err := s.Update(ctx, "/missing", nil, r); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Update missing: %v", err)
	}
	if _, _, err := s.Delete(ctx, "/k", r+100); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Delete stale: %v", err)
	}
	if _, _, err := s.Delete(ctx, "/missing", 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Delete missing: %v", err)
	}
	if cur := mustRev(t, s); cur != r {
		t.Fatalf("failed writes moved CurrentRevision from %d to %d", r, cur)
	}
	// And the next successful write is visible to a watcher right after r:
	// no event was produced for the failures.
	w := mustWatch(t, s, "/", r)
	r2 := mustUpdate(t, s, "/k", "w", r)
	expectEvent(t, w, storage.EventPut, "/k", "w", r2)
}

func testListPrefixIsolation(t *testing.T, s storage.Store) {
	keys := []string{"/a", "/a/", "/a/x", "/a/y/z", "/ab/x", "/a0", "/b/x", "/a/\xff"}
	for _, k := range keys {
		mustCreate(t, s, k, "v"+k)
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"/a/", []string{"/a/", "/a/x", "/a/y/z", "/a/\xff"}},
		{"/ab/", []string{"/ab/x"}},
		{"/a/y/", []string{"/a/y/z"}},
		{"/c/", nil},
		{"/", []string{"/a", "/a/", "/a/x", "/a/y/z", "/a/\xff", "/a0", "/ab/x", "/b/x"}},
		{"", []string{"/a", "/a/", "/a/x", "/a/y/z", "/a/\xff", "/a0", "/ab/x", "/b/x"}},
	}
	for _, tc := range cases {
		list, _, err := s.List(testCtx(t), tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		var got []string
		for _, kv := range list {
			got = append(got, kv.Key)
			if string(kv.Value) != "v"+kv.Key {
				t.Fatalf("List(%q): %q has value %q", tc.prefix, kv.Key, kv.Value)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Fatalf("List(%q) = %q, want %q (in key order)", tc.prefix, got, tc.want)
		}
	}
}

func testListRevision(t *testing.T, s storage.Store) {
	r1 := mustCreate(t, s, "/x/a", "1")
	r2 := mustCreate(t, s, "/y/b", "2") // outside the listed prefix, still counts
	list, rev, err := s.List(testCtx(t), "/x/")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if rev != r2 {
		t.Fatalf("List revision %d, want current revision %d", rev, r2)
	}
	if len(list) != 1 {
		t.Fatalf("List returned %d items, want 1", len(list))
	}
	expectKV(t, list[0], "/x/a", "1", r1, r1)
}

func testListEmpty(t *testing.T, s storage.Store) {
	list, rev, err := s.List(testCtx(t), "/nothing/")
	if err != nil || len(list) != 0 {
		t.Fatalf("List on empty store = %d items, %v", len(list), err)
	}
	if cur := mustRev(t, s); rev != cur {
		t.Fatalf("List revision %d, CurrentRevision %d", rev, cur)
	}
}

func testHealth(t *testing.T, s storage.Store) {
	if err := s.Health(testCtx(t)); err != nil {
		t.Fatalf("Health on a fresh store: %v", err)
	}
}

func testClose(t *testing.T, s storage.Store) {
	r := mustCreate(t, s, "/k", "v")
	w := mustWatch(t, s, "/", 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	waitClosed(t, w)
	ctx := testCtx(t)
	if _, err := s.Create(ctx, "/k2", nil); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Create after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Update(ctx, "/k", nil, r); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Update after Close: %v, want ErrClosed", err)
	}
	// The contract names ErrClosed for writes only; reads must fail somehow.
	if _, err := s.Get(ctx, "/k"); err == nil {
		t.Fatalf("Get after Close succeeded")
	}
	if _, err := s.Watch(ctx, "/", 0); err == nil {
		t.Fatalf("Watch after Close succeeded")
	}
	if err := s.Health(ctx); err == nil {
		t.Fatalf("Health after Close: nil")
	}
}
