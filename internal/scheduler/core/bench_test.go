package core

import (
	"context"
	"fmt"
	"testing"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// benchmarkSchedule measures one scheduling cycle per pod on 1,000 nodes
// of 64 cpu (room for every pod b.N can make), with or without sampling and
// equivalence classes.
func benchmarkSchedule(b *testing.B, cfg Config) {
	h := newHarness(&testing.T{}, cfg)
	for i := 0; i < 1000; i++ {
		h.c.AddNode(node(fmt.Sprintf("n%04d", i), "1000", nil))
	}
	for i := 0; i < b.N; i++ {
		h.add(pod(fmt.Sprintf("p%d", i), "100m", 0))
	}
	ctx := context.Background()
	b.ResetTimer()
	for h.q.Lengths().Active > 0 {
		if err := h.s.ScheduleOne(ctx); err != nil {
			b.Fatal(err)
		}
	}
	h.s.WaitForBindings()
}

func BenchmarkScheduleFullSearch(b *testing.B) {
	benchmarkSchedule(b, Config{PercentageOfNodesToScore: 100})
}
func BenchmarkScheduleSampling(b *testing.B) { benchmarkSchedule(b, Config{}) }
func BenchmarkScheduleEquivalence(b *testing.B) {
	benchmarkSchedule(b, Config{EquivalenceClasses: true})
}

// BenchmarkEquivalenceClass is the per-pod cost of the class key.
func BenchmarkEquivalenceClass(b *testing.B) {
	p := pod("p", "100m", 0)
	for b.Loop() {
		_ = EquivalenceClass(p)
	}
}

// BenchmarkNewPodInfo is the per-pod cost of computing requests.
func BenchmarkNewPodInfo(b *testing.B) {
	p := pod("p", "100m", 0)
	for b.Loop() {
		_ = framework.NewPodInfo(p)
	}
}
