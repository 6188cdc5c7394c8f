package embedded

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// gatedFS holds WAL syncs while armed, so a test can look at the store while
// a commit is applied but not yet durable.
type gatedFS struct {
	vfs.FS
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // receives once per sync held at the gate
	release chan struct{}
}

func (g *gatedFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &gatedFile{File: f, g: g}, nil
}

func (g *gatedFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.Create(name, c)
	return g.wrap(f, name, err)
}

func (g *gatedFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.ReuseForWrite(oldname, newname, c)
	return g.wrap(f, newname, err)
}

func (g *gatedFS) gate() {
	g.mu.Lock()
	armed := g.armed
	g.mu.Unlock()
	if armed {
		g.entered <- struct{}{}
		<-g.release
	}
}

type gatedFile struct {
	vfs.File
	g *gatedFS
}

func (f *gatedFile) Sync() error     { f.g.gate(); return f.File.Sync() }
func (f *gatedFile) SyncData() error { f.g.gate(); return f.File.SyncData() }
func (f *gatedFile) SyncTo(n int64) (bool, error) {
	f.g.gate()
	return f.File.SyncTo(n)
}

// Fd hides the descriptor so Pebble cannot sync around the wrapper.
func (f *gatedFile) Fd() uintptr { return vfs.InvalidFd }

// TestReadsWaitForDurability: Pebble makes a batch readable before its WAL
// fsync finishes; Get and List must not return it until it is durable.
func TestReadsWaitForDurability(t *testing.T) {
	g := &gatedFS{FS: vfs.Default, entered: make(chan struct{}), release: make(chan struct{})}
	s := openTest(t, Options{FS: g})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(g.release) }) }
	t.Cleanup(release) // runs before openTest's Close, even on failure
	ctx := context.Background()
	before, err := s.Create(ctx, "/before", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := s.Create(ctx, "/k", []byte("v"))
		done <- err
	}()
	select {
	case <-g.entered: // the commit is applied and waiting for its fsync
	case <-time.After(testWait):
		t.Fatal("commit never reached the WAL sync")
	}
	g.mu.Lock()
	g.armed = false
	g.mu.Unlock()
	// The held sync may be an earlier WAL sync rather than this batch's;
	// either way the batch cannot become durable while it is held. Wait
	// until the batch is applied (visible in Pebble).
	for deadline := time.Now().Add(testWait); ; {
		if rev, err := readMeta(s.db, metaCurrentKey); err == nil && rev > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch was never applied")
		}
		runtime.Gosched()
	}
	// These reads can only end by their deadline: the value they would see
	// is not durable. (Without the wait they return it at once.)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if kv, err := s.Get(short, "/k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get during the fsync returned %q, %v; want it to wait", kv.Value, err)
	}
	if kvs, _, err := s.List(short, "/"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("List during the fsync returned %d items, %v; want it to wait", len(kvs), err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/k"); err != nil {
		t.Fatalf("Get after the commit: %v", err)
	}
}
