package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestKillUnderWriteLoad SIGKILLs the server while clients write, restarts
// it, and checks that every acknowledged write is there, that revisions
// keep increasing, and that an informer resumes without relisting.
//
// The informer is made to lag: halfway through the writes it stops
// receiving watch events (gatedWatch), so when the server dies its
// resourceVersion is older than every later acknowledged write, hence
// older than the revision the restarted server's cache lists at. It can
// only resume because the restarted cache refills its event window from
// the store's history (cache.Config.PrefillRevisions); without that its
// watch gets 410 and it re-lists.
func TestKillUnderWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own server")
	}
	s, err := startServer(filepath.Join(t.TempDir(), "kill"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.stop() }()
	c := s.protoClient(t)
	mkNamespace(t, c, "kill")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// An informer whose lists we count: a list call, or (client-go's
	// default since 1.35, WatchListClient) a watch with initial events.
	var lists atomic.Int64
	var g gate
	var watchMu sync.Mutex
	var watchRVs []string // resourceVersion of every watch the informer made, in order
	cms := c.CoreV1().ConfigMaps("kill")
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return cms.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				lists.Add(1)
			}
			watchMu.Lock()
			watchRVs = append(watchRVs, o.ResourceVersion)
			watchMu.Unlock()
			w, err := cms.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return g.wrap(w), nil
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}

	type ack struct {
		name string
		rev  int64
	}
	var mu sync.Mutex
	var acked []ack
	var wg sync.WaitGroup
	writeCtx, stopWriting := context.WithCancel(ctx)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; writeCtx.Err() == nil; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				out, err := cms.Create(writeCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}, metav1.CreateOptions{})
				if err != nil {
					return // the server is gone
				}
				rev, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
				mu.Lock()
				acked = append(acked, ack{name, rev})
				mu.Unlock()
			}
		}(w)
	}
	ackedAtLeast := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= n
		}
	}
	waitFor(t, 30*time.Second, ackedAtLeast(150))
	// The informer stops hearing about changes; the writes go on.
	g.pause()
	waitFor(t, 10*time.Second, func() bool { return g.idle() })
	// The reflector records an event's revision just after taking it off
	// the channel; let the last one land.
	time.Sleep(500 * time.Millisecond)
	lagging, err := strconv.ParseInt(inf.LastSyncResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("informer resourceVersion %q: %v", inf.LastSyncResourceVersion(), err)
	}
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	waitFor(t, 30*time.Second, ackedAtLeast(n+150))
	s.kill()
	stopWriting()
	wg.Wait()
	// Whatever the dead server's watch still had in flight is lost with it;
	// the informer's next watch is made against the restarted server.
	g.dropAndResume()
	listsBefore := lists.Load()
	watchMu.Lock()
	watchesBefore := len(watchRVs)
	watchMu.Unlock()

	restarted, err := startServerOnPort(s.dataDir, s.port)
	if err != nil {
		t.Fatal(err)
	}
	*s = *restarted
	var maxRev int64
	for _, a := range acked {
		got, err := cms.Get(ctx, a.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("acknowledged write %s (rv %d) lost: %v", a.name, a.rev, err)
		}
		if rv, _ := strconv.ParseInt(got.ResourceVersion, 10, 64); rv < a.rev {
			t.Fatalf("%s: rv %d older than acknowledged %d", a.name, rv, a.rev)
		}
		if a.rev > maxRev {
			maxRev = a.rev
		}
	}
	after, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(after.ResourceVersion, 10, 64); rv <= maxRev {
		t.Fatalf("revision went backwards after restart: %d <= %d", rv, maxRev)
	}
	t.Logf("%d acknowledged writes survived SIGKILL", len(acked))
	// The restarted cache listed at its store's revision, which is at least
	// every acknowledged write's: the informer is verifiably older.
	behind := 0
	for _, a := range acked {
		if a.rev > lagging {
			behind++
		}
	}
	if behind < 100 {
		t.Fatalf("informer at %d is behind only %d acknowledged writes (newest %d); the test needs it lagging", lagging, behind, maxRev)
	}

	// The informer reconnects and catches up from its resourceVersion.
	waitFor(t, 30*time.Second, func() bool {
		_, ok, _ := inf.GetStore().GetByKey("kill/after-restart")
		return ok
	})
	for _, a := range acked {
		if _, ok, _ := inf.GetStore().GetByKey("kill/" + a.name); !ok {
			t.Fatalf("informer misses %s after resuming", a.name)
		}
	}
	if n := lists.Load(); n != listsBefore {
		t.Fatalf("informer relisted %d times after the restart; it should resume its watch", n-listsBefore)
	}
	watchMu.Lock()
	resumed := append([]string(nil), watchRVs[watchesBefore:]...)
	watchMu.Unlock()
	if len(resumed) == 0 || resumed[0] != strconv.FormatInt(lagging, 10) {
		t.Fatalf("watches after the restart from %v; want the first from the lagging revision %d", resumed, lagging)
	}
	t.Logf("informer resumed from revision %d, %d acknowledged writes behind (newest %d), without relisting", lagging, behind, maxRev)
}

// gate sits between the informer and its watches: paused, it stops
// delivering events (the informer's resourceVersion stops advancing while
// the server moves on); dropAndResume discards what the watches open so far
// hold and closes them, so the informer re-watches from the last revision
// it actually processed.
type gate struct {
	mu      sync.Mutex
	paused  bool
	gen     int // watches made before a dropAndResume have an older gen
	sending int // events handed to a watch's consumer but not yet taken
	resume  chan struct{}
}

func (g *gate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = true
	g.resume = make(chan struct{})
}

// idle reports that no event is on its way to the informer.
func (g *gate) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sending == 0
}

func (g *gate) dropAndResume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	g.paused = false
	if g.resume != nil {
		close(g.resume)
	}
}

func (g *gate) wrap(w watch.Interface) watch.Interface {
	g.mu.Lock()
	gw := &gatedWatch{g: g, inner: w, gen: g.gen, out: make(chan watch.Event), stop: make(chan struct{})}
	g.mu.Unlock()
	go gw.run()
	return gw
}

type gatedWatch struct {
	g        *gate
	inner    watch.Interface
	gen      int
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *gatedWatch) run() {
	defer close(w.out)
	defer w.inner.Stop()
	for ev := range w.inner.ResultChan() {
		w.g.mu.Lock()
		for w.g.paused {
			resume := w.g.resume
			w.g.mu.Unlock()
			select {
			case <-resume:
			case <-w.stop:
				return
			}
			w.g.mu.Lock()
		}
		if w.gen != w.g.gen {
			w.g.mu.Unlock()
			return // made against the dead server: drop what it had
		}
		w.g.sending++
		w.g.mu.Unlock()
		select {
		case w.out <- ev:
		case <-w.stop:
		}
		w.g.mu.Lock()
		w.g.sending--
		w.g.mu.Unlock()
	}
}

func (w *gatedWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
}

func (w *gatedWatch) ResultChan() <-chan watch.Event { return w.out }
