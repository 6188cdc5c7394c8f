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
// every 10 s, Node status on change or every 60 s) and "full-status" (the
// whole ~15 KB Node status every 10 s) — and the control plane's CPU,
// memory and write rate are compared.
type Heartbeat struct {
	// Nodes is the number of hollow nodes. Default 100.
	Nodes int
	// Duration measured per mode, after Warmup. Default 30 s (a multiple
	// of the 10 s renewal interval keeps the rates exact).
	Duration time.Duration
	// Warmup after the nodes are registered, before measuring. Default 3 s.
	Warmup time.Duration
	// Modes to run, in order: "lease", "full-status". Default both.
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
		c.Warmup = 3 * time.Second
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{"lease", "full-status"}
	}
	for _, m := range c.Modes {
		if m != "lease" && m != "full-status" {
			return fmt.Errorf("heartbeat mode %q: want lease or full-status", m)
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
	for _, mode := range c.Modes {
		nodes, err := hollowNodes(ctx, env, prefix, c.Nodes, mode == "full-status")
		if err != nil {
			return err
		}
		names = nodes.NodeNames()
		err = c.measure(ctx, env, nodes, mode)
		nodes.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// measure idles one mode's nodes and records its figures, keyed
// <mode>_<figure>.
func (c Heartbeat) measure(ctx context.Context, env *loadtest.Env, nodes *sim.Sim, mode string) error {
	r := env.Result
	env.Progress.Phase(mode+" warmup", 0, time.Now().Add(c.Warmup), nil)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(c.Warmup):
	}
	s0 := nodes.Stats()
	before, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	t0 := env.Elapsed()
	deadline := time.Now().Add(c.Duration)
	env.Progress.Phase(mode, 0, deadline, func() string {
		st := nodes.Stats()
		return fmt.Sprintf("heartbeats %d, status writes %d, lateness p99 %s", st.Renewals-s0.Renewals,
			st.NodeStatusUpdates-s0.NodeStatusUpdates, st.LatenessP99.Round(time.Millisecond))
	})
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(deadline)):
	}
	s1 := nodes.Stats()
	after, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	t1 := env.Elapsed()
	d := after.Since(before)
	secs := after.At.Sub(before.At).Seconds()
	leases := d.Sum(func(k loadtest.RequestKey) bool { return k.Resource == "leases" && loadtest.IsMutating(k.Verb) })
	status := d.Sum(func(k loadtest.RequestKey) bool {
		return k.Resource == "nodes" && k.Subresource == "status" && loadtest.IsMutating(k.Verb)
	})
	writes := d.Sum(func(k loadtest.RequestKey) bool { return loadtest.IsMutating(k.Verb) })
	rssAvg, rssMax := window(env.Monitor.Series(), "server rss", t0, t1)
	add := func(k, label string, v float64, unit string) { r.AddFigure(mode+"_"+k, mode+": "+label, v, unit) }
	add("server_cpu", "server CPU", d.CPUSeconds/secs, "cores")
	add("server_rss_avg", "server RSS (mean)", rssAvg, "MiB")
	add("server_rss_max", "server RSS (max)", rssMax, "MiB")
	add("writes_per_second", "server writes/s (all)", writes/secs, "req/s")
	add("lease_writes_per_second", "server Lease writes/s", leases/secs, "req/s")
	add("status_writes_per_second", "server Node status writes/s", status/secs, "req/s")
	heartbeats := float64(s1.Renewals - s0.Renewals)
	statusUpdates := float64(s1.NodeStatusUpdates - s0.NodeStatusUpdates)
	add("heartbeats", "heartbeats the nodes made", heartbeats, "")
	add("node_status_updates", "other Node status writes the nodes made", statusUpdates, "")
	add("heartbeat_errors", "failed heartbeats", float64(s1.RenewalErrors-s0.RenewalErrors), "")
	add("lateness_p99", "heartbeat lateness p99 (whole run)", s1.LatenessP99.Seconds(), "s")
	add("max_renew_gap", "longest gap between a node's heartbeats", s1.MaxRenewGap.Seconds(), "s")
	add("sim_cpu", "hollow nodes' process CPU (bench included)", (s1.CPUSeconds-s0.CPUSeconds)/secs, "cores")
	// What the nodes did must be what the server counted: Lease PUTs, or
	// status PUTs (heartbeats and changes) in full-status mode. The two
	// reads are a few milliseconds apart, hence the small tolerance.
	made, counted := heartbeats, leases
	if mode == "full-status" {
		made, counted = heartbeats+statusUpdates, status
	}
	tol := math.Max(2, 0.02*made)
	r.AddVerdict(mode+": server counted the nodes' heartbeats", fmt.Sprintf("%.0f (± %.0f)", made, tol), fmt.Sprintf("%.0f", counted),
		math.Abs(made-counted) <= tol)
	r.AddVerdict(mode+": no node missed its Lease", "longest gap < 40s", s1.MaxRenewGap.Round(time.Millisecond).String(),
		s1.MaxRenewGap < 40*time.Second)
	return nil
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
