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

	// An informer whose lists we count.
	var lists atomic.Int64
	cms := c.CoreV1().ConfigMaps("kill")
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return cms.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) },
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
	waitFor(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 300
	})
	s.kill()
	stopWriting()
	wg.Wait()
	listsBefore := lists.Load()

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
}
