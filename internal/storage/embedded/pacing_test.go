package embedded

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fakeClock is a pacer clock that advances only when told to or when the
// pacer sleeps.
type fakeClock struct {
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(d time.Duration) {
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
}

func TestPacedFile(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := newPacer(3)
	p.now, p.sleep = clock.now, clock.sleep
	fs := pacedFS{FS: vfs.NewMem(), pacer: p}

	for category, paced := range map[vfs.DiskWriteCategory]bool{
		"pebble-memtable-flush":      false,
		"pebble-wal":                 false,
		compactionWriteCategory:      true,
		blobRewriteWriteCategory:     true,
		vfs.WriteCategoryUnspecified: false,
	} {
		f, err := fs.Create("file-"+string(category), category)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(*pacedFile); ok != paced {
			t.Errorf("a file created for %q is paced: %v, want %v", category, ok, paced)
		}
	}
	f, err := fs.Create("compaction.sst", compactionWriteCategory)
	if err != nil {
		t.Fatal(err)
	}
	write := func(work time.Duration) {
		t.Helper()
		clock.t = clock.t.Add(work)
		if _, err := f.Write([]byte("block")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		active bool
		work   time.Duration
		want   []time.Duration // sleeps after the write
	}{
		{active: false, work: time.Millisecond, want: nil},
		{active: true, work: time.Millisecond, want: []time.Duration{3 * time.Millisecond}},
		{active: true, work: 2 * time.Millisecond, want: []time.Duration{6 * time.Millisecond}},
		{active: true, work: time.Second, want: []time.Duration{maxCompactionYield}},
		{active: true, work: 0, want: nil},
		{active: false, work: time.Second, want: nil},
	} {
		p.active.Store(tc.active)
		clock.slept = nil
		write(tc.work)
		if len(clock.slept) != len(tc.want) || (len(tc.want) == 1 && clock.slept[0] != tc.want[0]) {
			t.Errorf("active=%v, block took %v: slept %v, want %v", tc.active, tc.work, clock.slept, tc.want)
		}
	}
	if got, want := time.Duration(p.slept.Load()), 9*time.Millisecond+maxCompactionYield; got != want {
		t.Errorf("pacer slept %v in all, want %v", got, want)
	}
	data := make([]byte, 5*4)
	r, _ := fs.Open("compaction.sst")
	if n, _ := r.Read(data); n != len(data) {
		t.Errorf("paced file holds %d bytes, want %d", n, len(data))
	}
}

func TestPaceCompactions(t *testing.T) {
	for _, tc := range []struct {
		sublevels int32
		threshold int
		debt      uint64
		want      bool
	}{
		{0, 16, 0, true},
		{15, 16, 1 << 30, true},
		{16, 16, 0, false},
		{40, 16, 0, false},
		{0, 16, maxPacedDebt, false},
	} {
		if got := paceCompactions(tc.sublevels, tc.threshold, tc.debt); got != tc.want {
			t.Errorf("paceCompactions(%d sublevels, threshold %d, debt %d) = %v, want %v", tc.sublevels, tc.threshold, tc.debt, got, tc.want)
		}
	}
}

// TestCompactionPacing: a store paces its compactions while L0 is
// shallow (the decision itself is TestPaceCompactions), and pacing can be
// turned off.
func TestCompactionPacing(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	if s.pacer == nil {
		t.Fatal("no pacer by default")
	}
	// Three flushes of overlapping keys: three L0 sublevels, below the
	// depth (8) at which Pebble compacts them itself.
	value := make([]byte, 4096)
	for round := 0; round < 3; round++ {
		for i := 0; i < 50; i++ {
			if _, err := s.Create(ctx, "/k/"+strconv.Itoa(i*3+round), value); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.db.Metrics().Levels[0].Sublevels; n != 3 {
		t.Fatalf("%d L0 sublevels after three flushes, want 3", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.pacer.active.Load() {
		if time.Now().After(deadline) {
			t.Fatal("pacing is not active with a shallow L0")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.db.Compact(ctx, []byte("k"), []byte("l"), false); err != nil {
		t.Fatal(err)
	}
	if s.pacer.slept.Load() == 0 {
		t.Error("a compaction at a shallow L0 wrote without pacing")
	}

	off := openTest(t, Options{Dir: t.TempDir(), CompactionYield: -1})
	if off.pacer != nil {
		t.Error("pacer with CompactionYield -1")
	}
}
