package scenarios

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// Heartbeat is the `heartbeat` scenario: Nodes hollow nodes idle for
// Duration in each heartbeat mode — "lease" (KEP-0009: a Lease renewal
// every 10 s, Node status on change or every 5 min) and "full-status" (the
// whole ~15 KB Node status every 10 s) — and the control plane's CPU,
// memory and write rate are compared. An "idle" mode first measures the
// control plane without the nodes: its own background (leader-election
// Lease renewals, for one) is subtracted when the nodes' heartbeats are
// checked against the server's count.
type Heartbeat struct {
	// Nodes is the number of hollow nodes. Default 100.
	Nodes int
	// Duration measured per mode, after Warmup. Default 30 s (a multiple
	// of the 10 s renewal interval keeps the rates exact).
	Duration time.Duration
	// Warmup after the nodes are registered, before measuring. Default
	// 15 s: a hollow node's first renewal comes half a period to a period
	// and a half after registration, so only from 1.5 periods on does every
	// window of a period hold one heartbeat per node.
	Warmup time.Duration
	// Modes to run, in order: "idle" (no nodes), "lease", "full-status".
	// Default all three.
	Modes []string
}

func (c *Heartbeat) defaults() error {
	if c.Nodes <= 0 {
		c.Nodes = 100
	}
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.Warmup <= 0 {
		c.Warmup = 15 * time.Second
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{"idle", "lease", "full-status"}
	}
	for _, m := range c.Modes {
		if m != "idle" && m != "lease" && m != "full-status" {
			return fmt.Errorf("heartbeat mode %q: want idle, lease or full-status", m)
		}
	}
	return nil
}

// Run implements loadtest.Scenario.
func (c Heartbeat) Run(ctx context.Context, env *loadtest.Env) error {
	if err := c.defaults(); err != nil {
		return err
	}
	r := env.Result
	r.Params["nodes"] = itoa(c.Nodes)
	r.Params["duration"] = c.Duration.String()
	r.Params["warmup"] = c.Warmup.String()
	r.Params["modes"] = strings.Join(c.Modes, ",")
	prefix := "bench-hb-" + runID() + "-node-"
	var names []string
	defer func() {
		if names != nil {
			deleteNodes(ctx, env, names)
		}
	}()
	var idle *background
	for _, mode := range c.Modes {
		if mode == "idle" {
			bg, err := c.measure(ctx, env, nil, mode, nil)
			if err != nil {
				return err
			}
			idle = &bg
			continue
		}
		nodes, err := hollowNodes(ctx, env, prefix, c.Nodes, mode == "full-status")
		if err != nil {
			return err
		}
		names = nodes.NodeNames()
		_, err = c.measure(ctx, env, nodes, mode, idle)
		nodes.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// background is the idle control plane's own write rates.
type background struct {
	leasesPerSecond, statusPerSecond float64
}

// measure idles one mode's nodes (none for "idle") and records its
// figures, keyed <mode>_<figure>. idle, if measured, is the background
// to subtract from the server's counts.
func (c Heartbeat) measure(ctx context.Context, env *loadtest.Env, nodes *sim.Sim, mode string, idle *background) (background, error) {
	r := env.Result
	if nodes != nil {
		env.Progress.Phase(mode+" warmup", 0, time.Now().Add(c.Warmup), nil)
		if err := sleepCtx(ctx, c.Warmup); err != nil {
			return background{}, err
		}
	}
	stats := func() sim.Stats {
		if nodes == nil {
			return sim.Stats{}
		}
		return nodes.Stats()
	}
	// The server counts up to the moment it renders /metrics, somewhere
	// inside the scrape; the nodes' counters are read on both sides of it
	// and the midpoint taken, the spread going into the tolerance.
	s0 := stats()
	before, err := env.Monitor.Mark(ctx)
	s0b := stats()
	if err != nil {
		return background{}, fmt.Errorf("reading /metrics: %w", err)
	}
	t0 := env.Elapsed()
	deadline := time.Now().Add(c.Duration)
	env.Progress.Phase(mode, 0, deadline, func() string {
		if nodes == nil {
			return "no nodes"
		}
		st := nodes.Stats()
		return fmt.Sprintf("heartbeats %d, status writes %d, lateness p99 %s", st.Renewals-s0.Renewals,
			st.NodeStatusUpdates-s0.NodeStatusUpdates, st.LatenessP99.Round(time.Millisecond))
	})
	if err := sleepCtx(ctx, time.Until(deadline)); err != nil {
		return background{}, err
	}
	s1 := stats()
	after, err := env.Monitor.Mark(ctx)
	s1b := stats()
	if err != nil {
		return background{}, fmt.Errorf("reading /metrics: %w", err)
	}
	t1 := env.Elapsed()
	d := after.Since(before)
	secs := after.At.Sub(before.At).Seconds()
	// Accepted writes (2xx) are what the nodes can have had acknowledged;
	// the server's 429s (client-go retries them) are counted apart.
	ok := func(k loadtest.RequestKey) bool { return strings.HasPrefix(k.Code, "2") }
	leases := d.Sum(func(k loadtest.RequestKey) bool {
		return k.Resource == "leases" && loadtest.IsMutating(k.Verb) && ok(k)
	})
	status := d.Sum(func(k loadtest.RequestKey) bool {
		return k.Resource == "nodes" && k.Subresource == "status" && loadtest.IsMutating(k.Verb) && ok(k)
	})
	writes := d.Sum(func(k loadtest.RequestKey) bool { return loadtest.IsMutating(k.Verb) && ok(k) })
	throttled := d.Sum(func(k loadtest.RequestKey) bool { return k.Code == "429" })
	rssAvg, rssMax := window(env.Monitor.Series(), "server rss", t0, t1)
	add := func(k, label string, v float64, unit string) { r.AddFigure(mode+"_"+k, mode+": "+label, v, unit) }
	add("server_cpu", "server CPU", d.CPUSeconds/secs, "cores")
	add("server_rss_avg", "server RSS (mean)", rssAvg, "MiB")
	add("server_rss_max", "server RSS (max)", rssMax, "MiB")
	add("writes_per_second", "server writes/s accepted (all kinds)", writes/secs, "req/s")
	add("throttled", "requests the server answered 429 (client-go retries them)", throttled, "")
	add("lease_writes_per_second", "server Lease writes/s accepted", leases/secs, "req/s")
	add("status_writes_per_second", "server Node status writes/s accepted", status/secs, "req/s")
	if nodes == nil {
		return background{leasesPerSecond: leases / secs, statusPerSecond: status / secs}, nil
	}
	mid := func(a, b uint64) float64 { return (float64(a) + float64(b)) / 2 }
	heartbeats := mid(s1.Renewals, s1b.Renewals) - mid(s0.Renewals, s0b.Renewals)
	statusUpdates := mid(s1.NodeStatusUpdates, s1b.NodeStatusUpdates) - mid(s0.NodeStatusUpdates, s0b.NodeStatusUpdates)
	spread := (float64(s1b.Renewals-s1.Renewals+s0b.Renewals-s0.Renewals) +
		float64(s1b.NodeStatusUpdates-s1.NodeStatusUpdates+s0b.NodeStatusUpdates-s0.NodeStatusUpdates)) / 2
	add("heartbeats", "heartbeats the nodes made", heartbeats, "")
	add("node_status_updates", "other Node status writes the nodes made", statusUpdates, "")
	add("heartbeat_errors", "failed heartbeats", float64(s1.RenewalErrors-s0.RenewalErrors), "")
	add("lateness_p99", "heartbeat lateness p99 (whole run)", s1.LatenessP99.Seconds(), "s")
	add("max_renew_gap", "longest gap between a node's heartbeats", s1.MaxRenewGap.Seconds(), "s")
	add("sim_cpu", "hollow nodes' process CPU (bench included)", (s1.CPUSeconds-s0.CPUSeconds)/secs, "cores")
	// What the nodes did must be what the server counted: Lease PUTs, or
	// status PUTs (heartbeats and changes) in full-status mode, less the
	// idle control plane's own (its components' leader-election Leases).
	// The scrapes take time and the background is periodic, hence the
	// tolerance.
	made, counted, bg := heartbeats, leases, 0.0
	if mode == "full-status" {
		made, counted = heartbeats+statusUpdates, status
	}
	tol := math.Max(2, 0.02*made) + spread
	if idle != nil {
		bg = idle.leasesPerSecond * secs
		if mode == "full-status" {
			bg = idle.statusPerSecond * secs
		}
		tol += math.Ceil(bg / 2)
	}
	r.AddVerdict(mode+": server counted the nodes' heartbeats", fmt.Sprintf("%.0f (± %.0f)", made, tol),
		fmt.Sprintf("%.0f (%.1f of them background)", counted, bg), math.Abs(made-(counted-bg)) <= tol)
	r.AddVerdict(mode+": no node missed its Lease", "longest gap < 40s", s1.MaxRenewGap.Round(time.Millisecond).String(),
		s1.MaxRenewGap < 40*time.Second)
	return background{}, nil
}

// window is the mean and max of the named series' points between t0 and
// t1 (seconds since start).
func window(series []loadtest.Series, name string, t0, t1 float64) (mean, peak float64) {
	var n int
	for _, s := range series {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			if p.T >= t0 && p.T <= t1 {
				mean += p.V
				peak = max(peak, p.V)
				n++
			}
		}
	}
	if n > 0 {
		mean /= float64(n)
	}
	return mean, peak
}
