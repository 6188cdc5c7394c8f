package embedded_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/bench/storebench"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

func openBench(b *testing.B) *embedded.Store {
	b.Helper()
	s, err := embedded.Open(context.Background(), embedded.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkWrite1KB measures durable (fsync'd) creates of 1 KB objects with
// 1 and 64 concurrent writers. ns/op is wall time per write across all
// writers; the latency metrics are per call.
func BenchmarkWrite1KB(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openBench(b)
			b.ResetTimer()
			res, err := storebench.Run(context.Background(), storebench.Config{
				Store: s, Writers: writers, ObjectSize: 1024, Count: b.N, Reads: -1,
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(1024)
			b.ReportMetric(res.WritesPerSec, "writes/s")
			b.ReportMetric(ms(res.WriteP50), "p50-ms")
			b.ReportMetric(ms(res.WriteP99), "p99-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// preload fills s with n 1 KB benchmark objects (storebench.Key(0..n-1)).
func preload(b *testing.B, s *embedded.Store, n int) {
	b.Helper()
	if _, err := storebench.Run(context.Background(), storebench.Config{
		Store: s, Writers: 256, ObjectSize: 1024, Count: n, Reads: -1,
	}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGet measures linearizable point reads among 10,000 1 KB objects.
func BenchmarkGet(b *testing.B) {
	s := openBench(b)
	const n = 10000
	preload(b, s, n)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, storebench.Key(rand.IntN(n))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkList measures consistent prefix lists over 10,000 1 KB objects:
// one namespace (100 objects) and everything.
func BenchmarkList(b *testing.B) {
	s := openBench(b)
	const n = 10000
	preload(b, s, n)
	ctx := context.Background()
	for _, tc := range []struct{ name, prefix string }{
		{"namespace", "/registry/pods/ns-042/"},
		{"all", "/registry/pods/"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var items int
			for b.Loop() {
				kvs, _, err := s.List(ctx, tc.prefix)
				if err != nil {
					b.Fatal(err)
				}
				items = len(kvs)
			}
			b.ReportMetric(float64(items), "objects/list")
			b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// BenchmarkUpdate1KB measures durable compare-and-swap updates of 1 KB
// values among 10,240 objects with 64 writers, each owning its own keys
// (so no update conflicts). Since updates record the value they replace
// (storage.Event.PrevValue), each one also reads it, in the caller's
// goroutine (Store.peek); this is what that costs.
func BenchmarkUpdate1KB(b *testing.B) {
	const n, writers = 10240, 64 // n a multiple of writers: disjoint keys
	s := openBench(b)
	preload(b, s, n)
	ctx := context.Background()
	revs := make([]int64, n)
	for i := range n {
		kv, err := s.Get(ctx, storebench.Key(i))
		if err != nil {
			b.Fatal(err)
		}
		revs[i] = kv.ModRevision
	}
	var next atomic.Int64
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			value := make([]byte, 1024)
			for k := 0; ; k++ {
				if next.Add(1) > int64(b.N) {
					return
				}
				i := (w + k*writers) % n
				value[0] = byte(k)
				start := time.Now()
				rev, err := s.Update(ctx, storebench.Key(i), value, revs[i])
				if err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(start))
				revs[i] = rev
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "writes/s")
		b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
		b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	}
}
