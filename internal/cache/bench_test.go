package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// The benchmark cluster: 200,000 pods over 10,000 nodes, 100 namespaces
// (2,000 pods each) and 1,000 app labels (200 pods each). Override the
// scale with MYRIAD_BENCH_PODS for quick runs.
const (
	benchNodes      = 10_000
	benchNamespaces = 100
	benchApps       = 1_000
)

func benchPods() int {
	if s := os.Getenv("MYRIAD_BENCH_PODS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 200_000
}

// benchPod is a pod of realistic size (~1.5 KB of protobuf).
func benchPod(i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i%benchApps)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%benchNamespaces),
			Name:      fmt.Sprintf("%s-%08d", app, i),
			Labels:    map[string]string{"app": app, "pod-template-hash": "5d4f8c9b7", "tier": "backend"},
			Annotations: map[string]string{
				"kubernetes.io/config.seen": "2026-11-22T04:00:00Z",
			},
			UID:               types.UID(fmt.Sprintf("0b3c5d4e-8a7f-4e2b-9c1d-%012d", i)),
			CreationTimestamp: metav1.Unix(1_700_000_000, 0),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d4f8c9b7", UID: "11111111-2222-3333-4444-555555555555"}},
		},
		Spec: corev1.PodSpec{
			NodeName:           fmt.Sprintf("node-%d", i%benchNodes),
			Containers:         []corev1.Container{benchutil.WithTokenMount(benchutil.AppContainer(app))},
			Volumes:            []corev1.Volume{benchutil.TokenVolume()},
			ServiceAccountName: "default",
			RestartPolicy:      corev1.RestartPolicyAlways,
		},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			HostIP: "10.0.0.1",
			PodIP:  "10.1.2.3",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(1_700_000_100, 0)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(1_700_000_001, 0)},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, Image: "registry.example.com/team/" + app + ":v1.2.3", ImageID: "sha256:abcdef", ContainerID: "containerd://0123456789abcdef"}},
		},
	}
}

// benchFixture is one loaded store and cache shared by every benchmark of
// the process (loading 200k pods takes a while; the machine is shared).
type benchFixture struct {
	store     *embedded.Store
	codec     *podCodec
	c         *Cache
	pods      int
	loadTime  time.Duration
	heapBytes uint64 // heap growth from starting the cache on the loaded store
}

var (
	fixtureOnce sync.Once
	fixture     *benchFixture
	fixtureErr  error
)

func getFixture(b *testing.B) *benchFixture {
	fixtureOnce.Do(func() { fixture, fixtureErr = loadFixture(b) })
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixture
}

func loadFixture(b *testing.B) (*benchFixture, error) {
	dir, err := os.MkdirTemp("", "cache-bench-")
	if err != nil {
		return nil, err
	}
	// Not removed by b.Cleanup: the fixture outlives the first benchmark.
	ctx := context.Background()
	s, err := embedded.Open(ctx, embedded.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	f := &benchFixture{store: s, codec: newPodCodec(b), pods: benchPods()}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 128 { // many writers so group commit fills its batches
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= f.pods {
					return
				}
				p := benchPod(i)
				if _, err := s.Create(ctx, podKey(p.Namespace, p.Name), f.codec.encode(b, p)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	f.loadTime = time.Since(start)

	// Warm the store's block cache (Go heap when built without cgo) so
	// that the heap growth measured below is the cache's alone.
	if _, _, err := s.List(ctx, podPrefix); err != nil {
		return nil, err
	}
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	c, err := New(Config{
		Store: s, Prefix: podPrefix,
		NewFunc:       func() runtime.Object { return &corev1.Pod{} },
		Decode:        f.codec.decode,
		Attrs:         podAttrs,
		IndexedFields: []string{"spec.nodeName"},
		Logger:        nil,
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	f.heapBytes = after.HeapAlloc - before.HeapAlloc
	f.c = c
	b.Logf("loaded %d pods into the store in %v; cache heap %.1f MiB (%.0f B/object)", f.pods, f.loadTime, float64(f.heapBytes)/(1<<20), float64(f.heapBytes)/float64(f.pods))
	return f, nil
}

// latencies records one duration per op and reports p50/p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	pct := func(p float64) float64 { return float64(l[int(p*float64(len(l)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

func benchList(b *testing.B, opts func(i int) ListOptions) {
	f := getFixture(b)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	items := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		n := 0
		if _, err := f.c.List(ctx, opts(i), func(runtime.Object) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		items += n
	}
	b.StopTimer()
	lat.report(b)
	b.ReportMetric(float64(items)/float64(b.N), "items/op")
}

func BenchmarkMemoryPerObject(b *testing.B) {
	f := getFixture(b)
	for i := 0; i < b.N; i++ {
	}
	b.ReportMetric(float64(f.heapBytes)/float64(f.pods), "B/object")
}

func BenchmarkGet(b *testing.B) {
	for _, rv := range []string{"", "0"} {
		b.Run("rv="+strconv.Quote(rv), func(b *testing.B) {
			f := getFixture(b)
			ctx := context.Background()
			lat := make(latencies, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := (i * 7919) % f.pods
				ns, name := fmt.Sprintf("ns-%d", p%benchNamespaces), fmt.Sprintf("app-%d-%08d", p%benchApps, p)
				start := time.Now()
				if _, err := f.c.Get(ctx, podKey(ns, name), rv); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			lat.report(b)
		})
	}
}

// Consistent lists (resourceVersion unset), the expensive kind.
func BenchmarkListByNode(b *testing.B) {
	benchList(b, func(i int) ListOptions {
		return ListOptions{Field: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%d", (i*7919)%benchNodes))}
	})
}

func BenchmarkListByLabel(b *testing.B) {
	benchList(b, func(i int) ListOptions {
		return ListOptions{Label: labels.SelectorFromSet(labels.Set{"app": fmt.Sprintf("app-%d", (i*31)%benchApps)})}
	})
}

func BenchmarkListByNamespace(b *testing.B) {
	benchList(b, func(i int) ListOptions { return ListOptions{Namespace: fmt.Sprintf("ns-%d", (i*7)%benchNamespaces)} })
}

func BenchmarkListAll(b *testing.B) {
	benchList(b, func(int) ListOptions { return ListOptions{} })
}

func BenchmarkListAllPaged500(b *testing.B) {
	f := getFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := ""
		for {
			res, err := f.c.List(ctx, ListOptions{Limit: 500, Continue: tok}, func(runtime.Object) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			if tok = res.Continue; tok == "" {
				break
			}
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchFanout: 10,000 watchers, one per node (field selector
// spec.nodeName), each drained by its own goroutine as the API server's
// watch handlers would; pods are updated through the store at ~1,000/s.
// Reports the end-to-end delivery latency (store write start → watcher
// receive) and process CPU per update (store write + cache + delivery).
// One op = one update.
func BenchmarkWatchFanout(b *testing.B) {
	f := getFixture(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const rate = 1000 // updates/s
	var (
		mu  sync.Mutex
		lat latencies
		got atomic.Int64
		wg  sync.WaitGroup
	)
	for n := range benchNodes {
		w, err := f.c.Watch(ctx, WatchOptions{ResourceVersion: formatRV(f.c.Revision()), Field: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%d", n)), AllowBookmarks: true})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			var local latencies
			for ev := range w.ResultChan() {
				if ev.Type != "MODIFIED" {
					continue
				}
				sent, _ := strconv.ParseInt(evObj(ev).(*corev1.Pod).Annotations["bench/sent"], 10, 64)
				local = append(local, time.Since(time.Unix(0, sent)))
				got.Add(1)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	updates := b.N
	jobs := make(chan int, 64)
	var writers sync.WaitGroup
	for range 64 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range jobs {
				p := benchPod(rand.IntN(f.pods))
				p.Annotations = map[string]string{"bench/sent": strconv.FormatInt(time.Now().UnixNano(), 10)}
				p.Status.PodIP = fmt.Sprintf("10.9.%d.%d", i/250%250, i%250)
				key := podKey(p.Namespace, p.Name)
				if _, err := f.store.Update(ctx, key, f.codec.encode(b, p), 0); err != nil {
					// expectedRevision 0 is not "any" for Update: read first.
					cur, gerr := f.store.Get(ctx, key)
					if gerr == nil {
						_, err = f.store.Update(ctx, key, f.codec.encode(b, p), cur.ModRevision)
					}
					if err != nil {
						b.Error(err)
					}
				}
			}
		}()
	}
	cpu0, t0 := cpuTime(), time.Now()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	for i := 0; i < updates; {
		<-tick.C
		due := int(time.Since(t0).Seconds()*rate) - i
		for ; due > 0 && i < updates; due-- {
			jobs <- i
			i++
		}
	}
	tick.Stop()
	close(jobs)
	writers.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() < int64(updates) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	cancel()
	wg.Wait()
	if int(got.Load()) < updates {
		b.Fatalf("delivered %d of %d updates", got.Load(), updates)
	}
	lat.report(b)
	b.ReportMetric(float64(cpu.Microseconds())/float64(updates), "cpu-µs/update")
	b.ReportMetric(float64(updates)/elapsed.Seconds(), "updates/s")
}

var (
	retainedOnce sync.Once
	retained     *Cache
)

// The same list against a cache built with RetainObjects: no decoding per
// item, about 3x the memory. Last in the file: its extra 1.2 GB heap would
// slow the garbage collector for every benchmark after it.
func BenchmarkListByNodeRetained(b *testing.B) {
	f := getFixture(b)
	retainedOnce.Do(func() {
		c, err := New(Config{Store: f.store, Prefix: podPrefix, NewFunc: func() runtime.Object { return &corev1.Pod{} },
			Decode: f.codec.decode, Attrs: podAttrs, IndexedFields: []string{"spec.nodeName"}, RetainObjects: true})
		if err != nil {
			b.Fatal(err)
		}
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitReady(context.Background()); err != nil {
			b.Fatal(err)
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		b.Logf("RetainObjects cache heap %.1f MiB (%.0f B/object)", float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), float64(after.HeapAlloc-before.HeapAlloc)/float64(f.pods))
		retained = c
	})
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		opts := ListOptions{Field: fields.OneTermEqualSelector("spec.nodeName", fmt.Sprintf("node-%d", (i*7919)%benchNodes))}
		if _, err := retained.List(ctx, opts, func(runtime.Object) error { return nil }); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkRestartPrefill measures what the event-window prefill adds to a
// cache's start: a store of MYRIAD_BENCH_PODS pods (200,000) whose newest
// MYRIAD_BENCH_HISTORY revisions (20,000) are pod updates, started with
// prefill off, with the default prefill (every one of those updates goes
// into the window, two decodes each), and for another, empty resource type
// (the history log is global: it reads the same 20,000 records and keeps
// none, which is what every other cache of an API server pays). Each op is
// one New+Start+WaitReady+Stop on the loaded store; its own fixture, so
// the shared one is not disturbed.
func BenchmarkRestartPrefill(b *testing.B) {
	history := 20_000
	if s := os.Getenv("MYRIAD_BENCH_HISTORY"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			history = n
		}
	}
	ctx := context.Background()
	s, err := embedded.Open(ctx, embedded.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	codec := newPodCodec(b)
	pods := benchPods()
	write := func(n int, op func(i int) error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 128 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					if err := op(i); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	start := time.Now()
	write(pods, func(i int) error {
		p := benchPod(i)
		_, err := s.Create(ctx, podKey(p.Namespace, p.Name), codec.encode(b, p))
		return err
	})
	// Updates of distinct pods (spread over the keyspace), as status
	// updates of a busy cluster would be.
	write(history, func(i int) error {
		p := benchPod(i * (pods / history))
		p.Status.Conditions[0].LastTransitionTime = metav1.Unix(1_700_001_000+int64(i), 0)
		key := podKey(p.Namespace, p.Name)
		cur, err := s.Get(ctx, key)
		if err != nil {
			return err
		}
		_, err = s.Update(ctx, key, codec.encode(b, p), cur.ModRevision)
		return err
	})
	b.Logf("store: %d pods and %d updates in %v", pods, history, time.Since(start))
	for _, tc := range []struct {
		name    string
		prefix  string
		prefill int64
	}{
		{"pods/prefill=off", podPrefix, -1},
		{"pods/prefill=default", podPrefix, 0},
		{"empty-type/prefill=off", "/core/configmaps/", -1},
		{"empty-type/prefill=default", "/core/configmaps/", 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var events int
			for b.Loop() {
				c, err := New(Config{
					Store: s, Prefix: tc.prefix,
					NewFunc:          func() runtime.Object { return &corev1.Pod{} },
					Decode:           codec.decode,
					Attrs:            podAttrs,
					IndexedFields:    []string{"spec.nodeName"},
					PrefillRevisions: tc.prefill,
				})
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Start(ctx); err != nil {
					b.Fatal(err)
				}
				if err := c.WaitReady(ctx); err != nil {
					b.Fatal(err)
				}
				c.mu.RLock()
				events = c.mu.win.len()
				c.mu.RUnlock()
				c.Stop()
			}
			b.ReportMetric(float64(events), "window-events")
		})
	}
}
