package etcd

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

// BenchmarkStore compares the per-request cost of the etcd backend (a
// 1-member in-process etcd, over loopback gRPC, fsync off as in every
// etcdtest cluster) with the embedded store, for 1 KiB values:
//
//	go test -run XXX -bench BenchmarkStore -benchtime 2000x ./internal/storage/etcd
//
// Writes run from 16 goroutines (an API server's concurrency), so the
// figures are throughput per request, not single-request latency.
func BenchmarkStore(b *testing.B) {
	backends := []struct {
		name string
		open func(b *testing.B) storage.Store
	}{
		{"etcd-1", func(b *testing.B) storage.Store {
			return newTestStore(b, etcdtest.Start(b, 1), Config{})
		}},
		{"etcd-3", func(b *testing.B) storage.Store {
			return newTestStore(b, etcdtest.Start(b, 3), Config{})
		}},
		{"embedded", func(b *testing.B) storage.Store {
			s, err := embedded.Open(context.Background(), embedded.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	value := make([]byte, 1024)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			ctx := context.Background()
			var n atomic.Int64
			b.Run("Create", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := s.Create(ctx, fmt.Sprintf("/core/pods/ns/p%d", n.Add(1)), value); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			rev, err := s.Create(ctx, "/core/pods/ns/hot", value)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("Update", func(b *testing.B) {
				// One key, in sequence: a compare-and-swap chain.
				b.ReportAllocs()
				for b.Loop() {
					if rev, err = s.Update(ctx, "/core/pods/ns/hot", value, rev); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Get", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(16)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := s.Get(ctx, "/core/pods/ns/hot"); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		})
	}
}
