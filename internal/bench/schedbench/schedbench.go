package schedbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/procstat"
	"github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/core"
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

// Scenario is a cluster size.
type Scenario struct{ Nodes, Pods int }

// Mode is a combination of the scale mechanisms.
type Mode struct {
	Name               string
	EquivalenceClasses bool
	// Percentage of nodes to score: 0 adaptive (sampling), 100 all.
	Percentage int
	// RebuildSnapshot copies the whole cluster before every search, to
	// show what the incremental cache saves.
	RebuildSnapshot bool
}

// RebuildMode is sampling with the snapshot rebuilt per pod; not in the
// defaults because it is slow on big clusters (use --max-pods-per-run).
func RebuildMode() Mode {
	return Mode{Name: "sampling, snapshot rebuilt per pod", RebuildSnapshot: true}
}

// DefaultModes are the four combinations.
func DefaultModes() []Mode {
	return []Mode{
		{Name: "full search", Percentage: 100},
		{Name: "sampling", Percentage: 0},
		{Name: "equivalence", EquivalenceClasses: true, Percentage: 100},
		{Name: "equivalence+sampling", EquivalenceClasses: true, Percentage: 0},
	}
}

// DefaultScenarios are the two sizes.
func DefaultScenarios() []Scenario {
	return []Scenario{{Nodes: 1000, Pods: 30000}, {Nodes: 5000, Pods: 50000}}
}

// Config configures Run.
type Config struct {
	Scenarios []Scenario
	Modes     []Mode
	// Templates is the number of ReplicaSet-like templates. Default 300.
	Templates int
	// Parallelism is the filtering goroutines. Default GOMAXPROCS.
	Parallelism int
	// MaxPodsPerRun caps the pods of one (scenario, mode) run, for slow
	// modes on big clusters; 0 = no cap. Capped runs say so in the report.
	MaxPodsPerRun int
	Seed          uint64
	Progress      io.Writer
}

// Run is one (scenario, mode) measurement.
type RunResult struct {
	Scenario      Scenario
	Mode          Mode
	Pods          int // pods scheduled in this run (may be capped)
	Scheduled     int
	Unschedulable int
	// Enqueue is the time to turn pods into queue entries (what the pod
	// informer handler does: requests, equivalence class); Schedule the
	// time from the first pop until the last binding was recorded.
	Enqueue, Schedule time.Duration
	PodsPerSec        float64 // Scheduled / Schedule
	// ScheduleCPU is the process's CPU time (user+system, all threads,
	// GC included) during Schedule: on a shared machine wall time
	// stretches with other load, CPU time much less.
	ScheduleCPU   time.Duration
	PodsPerCPUSec float64
	// Allocated CPU fraction across schedulable (untainted) nodes.
	CPUMean, CPUStddev, CPUMin, CPUMax float64
}

// Result is the whole benchmark.
type Result struct {
	Start       time.Time
	GoMaxProcs  int
	Parallelism int
	Templates   int
	Runs        []RunResult
}

// Run measures every scenario in every mode.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Scenarios) == 0 {
		cfg.Scenarios = DefaultScenarios()
	}
	if len(cfg.Modes) == 0 {
		cfg.Modes = DefaultModes()
	}
	if cfg.Templates <= 0 {
		cfg.Templates = 300
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = runtime.GOMAXPROCS(0)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	res := &Result{Start: time.Now(), GoMaxProcs: runtime.GOMAXPROCS(0), Parallelism: cfg.Parallelism, Templates: cfg.Templates}
	for _, sc := range cfg.Scenarios {
		nodes := Nodes(sc.Nodes)
		pods := Pods(sc.Pods, cfg.Templates, cfg.Seed)
		for _, m := range cfg.Modes {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			ps := pods
			if cfg.MaxPodsPerRun > 0 && len(ps) > cfg.MaxPodsPerRun {
				ps = ps[:cfg.MaxPodsPerRun]
			}
			fmt.Fprintf(cfg.Progress, "scheduler bench: %d nodes, %d pods, %s\n", sc.Nodes, len(ps), m.Name)
			r, err := runOne(ctx, cfg, sc, m, nodes, ps)
			if err != nil {
				return res, err
			}
			fmt.Fprintf(cfg.Progress, "  %.0f pods/s, cpu fraction stddev %.3f min %.3f max %.3f\n", r.PodsPerSec, r.CPUStddev, r.CPUMin, r.CPUMax)
			res.Runs = append(res.Runs, r)
			runtime.GC()
		}
	}
	return res, nil
}

// memBinder records bindings in memory.
type memBinder struct {
	bound atomic.Int64
}

func (b *memBinder) Bind(context.Context, *v1.Pod, string) error {
	b.bound.Add(1)
	return nil
}

type countingReporter struct {
	mu            sync.Mutex
	unschedulable int
}

func (r *countingReporter) Scheduled(context.Context, *v1.Pod, string) {}
func (r *countingReporter) Unschedulable(context.Context, *v1.Pod, string) {
	r.mu.Lock()
	r.unschedulable++
	r.mu.Unlock()
}
func (r *countingReporter) Preempt(context.Context, *v1.Pod, string, []*v1.Pod) error { return nil }

func runOne(ctx context.Context, cfg Config, sc Scenario, m Mode, nodes []*v1.Node, pods []*v1.Pod) (RunResult, error) {
	c := cache.New(time.Hour)
	for _, n := range nodes {
		c.AddNode(n)
	}
	q := queue.New(queue.Config{})
	binder := &memBinder{}
	rep := &countingReporter{}
	s, err := core.New(core.Config{
		EquivalenceClasses: m.EquivalenceClasses, PercentageOfNodesToScore: m.Percentage, RebuildSnapshot: m.RebuildSnapshot,
		Parallelism: cfg.Parallelism, Binder: binder, Reporter: rep, Seed: cfg.Seed,
		// Every pod has priority 0: nothing to preempt, and the search for
		// victims is not what is measured.
		DisablePreemption: true,
	}, c, q)
	if err != nil {
		return RunResult{}, err
	}
	r := RunResult{Scenario: sc, Mode: m, Pods: len(pods)}
	var done atomic.Int64
	stop := benchutil.ReportProgress(cfg.Progress, m.Name, len(pods), &done)
	defer stop()

	start := time.Now()
	for _, p := range pods {
		class := ""
		if m.EquivalenceClasses {
			class = core.EquivalenceClass(p)
		}
		q.Add(framework.NewPodInfo(p), class)
	}
	r.Enqueue = time.Since(start)

	start = time.Now()
	cpu0 := processCPU()
	for q.Lengths().Active > 0 {
		if err := s.ScheduleOne(ctx); err != nil {
			return r, err
		}
		done.Store(binder.bound.Load() + int64(rep.unschedulable))
	}
	s.WaitForBindings()
	r.Schedule = time.Since(start)
	r.ScheduleCPU = processCPU() - cpu0
	r.Scheduled = int(binder.bound.Load())
	r.Unschedulable = rep.unschedulable
	r.PodsPerSec = float64(r.Scheduled) / r.Schedule.Seconds()
	if r.ScheduleCPU > 0 {
		r.PodsPerCPUSec = float64(r.Scheduled) / r.ScheduleCPU.Seconds()
	}
	r.CPUMean, r.CPUStddev, r.CPUMin, r.CPUMax = cpuSpread(c)
	return r, nil
}

// cpuSpread summarizes requested/allocatable CPU over untainted nodes (the
// tainted pool only takes tolerating pods, so its fill is not comparable).
func cpuSpread(c *cache.Cache) (mean, stddev, lo, hi float64) {
	var fr []float64
	c.View(func(s cache.Snapshot) {
		for _, n := range s.Nodes() {
			if len(n.Node.Spec.Taints) > 0 || n.Allocatable.MilliCPU == 0 {
				continue
			}
			fr = append(fr, float64(n.Requested.MilliCPU)/float64(n.Allocatable.MilliCPU))
		}
	})
	if len(fr) == 0 {
		return 0, 0, 0, 0
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, f := range fr {
		mean += f
		lo, hi = math.Min(lo, f), math.Max(hi, f)
	}
	mean /= float64(len(fr))
	for _, f := range fr {
		stddev += (f - mean) * (f - mean)
	}
	stddev = math.Sqrt(stddev / float64(len(fr)))
	return mean, stddev, lo, hi
}

// processCPU is the process's user+system CPU time so far (0 where it
// cannot be read).
func processCPU() time.Duration {
	d, _ := procstat.ReadCPU(procstat.Self)
	return d
}
