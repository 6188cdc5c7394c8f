package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// WatchLatency is the `watch-latency` scenario: writers create and update
// config maps at a fixed rate while Watchers watch their namespace; the
// figure is the delay from a write's acknowledgement to each watcher
// receiving its event.
type WatchLatency struct {
	// Watchers is the number of concurrent watches. Default 10.
	Watchers int
	// Rate of writes per second. Default 20.
	Rate float64
	// Duration of the writing phase. Default 20 s.
	Duration time.Duration
	// MaxWrites bounds the writes (0: Rate × Duration).
	MaxWrites int64
}

func (c *WatchLatency) defaults() {
	if c.Watchers <= 0 {
		c.Watchers = 10
	}
	if c.Rate <= 0 {
		c.Rate = 20
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
}

// watchKey is the key watch delays are recorded under.
var watchKey = key("WATCH", "configmaps", "namespace")

// sentKey records the delay from sending the write (rather than from its
// answer) to each watcher's receipt: an upper bound that includes the
// write's own latency, useful when most events beat the answer.
var sentKey = key("WATCH-FROM-SEND", "configmaps", "namespace")

// seenEvent is one event a watcher received.
type seenEvent struct {
	rv string
	at time.Time
}

// Run implements loadtest.Scenario.
func (c WatchLatency) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	maxWrites := c.MaxWrites
	if maxWrites <= 0 {
		maxWrites = int64(c.Rate * c.Duration.Seconds())
	}
	r.Params["watchers"] = itoa(c.Watchers)
	r.Params["rate"] = ftoa(c.Rate)
	r.Params["duration"] = c.Duration.String()
	r.Params["max-writes"] = fmt.Sprint(maxWrites)
	env.SLOs = true

	prefix := "bench-watch-" + runID()
	namespaces, err := createNamespaces(ctx, env.Client, prefix, 1)
	if err != nil {
		return err
	}
	defer cleanupNamespaces(ctx, env, namespaces)
	ns := namespaces[0]
	cms := env.Client.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing config maps: %w", err)
	}

	// Watchers: each starts from the list's revision, so none can miss a
	// write, and keeps what it saw until the end.
	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWatch(); wg.Wait() }() // on an early return too
	seen := make([][]seenEvent, c.Watchers)
	var seenMu sync.Mutex
	counts := make([]int, c.Watchers)
	for i := range c.Watchers {
		w, err := cms.Watch(watchCtx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			return fmt.Errorf("watch %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				at := time.Now()
				if ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				seenMu.Lock()
				seen[i] = append(seen[i], seenEvent{rv: cm.ResourceVersion, at: at})
				counts[i]++
				seenMu.Unlock()
			}
		}()
	}

	type worker struct {
		owned []*corev1.ConfigMap
		seq   int
	}
	workers := make([]*worker, 4)
	for i := range workers {
		workers[i] = &worker{}
	}
	var ackMu sync.Mutex
	acked := map[string]time.Time{} // by resourceVersion: when the writer had the answer
	sent := map[string]time.Time{}  // and when it sent the request
	deadline := time.Now().Add(c.Duration)
	env.Progress.Phase("write", maxWrites, deadline, func() string {
		seenMu.Lock()
		defer seenMu.Unlock()
		low := -1
		for _, n := range counts {
			if low < 0 || n < low {
				low = n
			}
		}
		return fmt.Sprintf("slowest watcher has seen %d", low)
	})
	started, dropped := pace(ctx, c.Rate, len(workers), deadline, maxWrites, func(ctx context.Context, wi int, _ int64) {
		wk := workers[wi]
		wk.seq++
		var out *corev1.ConfigMap
		var err error
		t0 := time.Now()
		// Alternate creates and updates of this worker's own config maps.
		if wk.seq%2 == 1 || len(wk.owned) == 0 {
			err = env.Latency.Time(key("POST", "configmaps", "resource"), func() (err error) {
				out, err = cms.Create(ctx, configMap(fmt.Sprintf("w%d-%d", wi, wk.seq)), metav1.CreateOptions{})
				return err
			})
			if err == nil {
				wk.owned = append(wk.owned, out)
			}
		} else {
			i := wk.seq % len(wk.owned)
			cm := wk.owned[i].DeepCopy()
			cm.Data["seq"] = fmt.Sprint(wk.seq)
			err = env.Latency.Time(key("PUT", "configmaps", "resource"), func() (err error) {
				out, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				return err
			})
			if err == nil {
				wk.owned[i] = out
			}
		}
		if err == nil {
			ackMu.Lock()
			acked[out.ResourceVersion] = time.Now()
			sent[out.ResourceVersion] = t0
			ackMu.Unlock()
		}
		env.Progress.Add(1)
	})
	// Wait (bounded) for every watcher to catch up with every write.
	want := len(acked)
	env.Progress.Phase("drain", int64(want*c.Watchers), time.Now().Add(30*time.Second), nil)
	drainDeadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(drainDeadline) && ctx.Err() == nil {
		if caughtUp(&seenMu, seen, acked) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopWatch()
	wg.Wait()

	// Delays: from each write's acknowledgement to each watcher's receipt.
	// A watcher may see an event before the writer has read the answer;
	// that counts as no delay (and is counted).
	delays := loadtest.NewRecorder(env.Start)
	fromSend := loadtest.NewRecorder(env.Start)
	var early, missing, extra int
	for i := range seen {
		got := map[string]bool{}
		for _, e := range seen[i] {
			ack, ok := acked[e.rv]
			if !ok || got[e.rv] {
				extra++ // not ours, a write whose answer was lost, or a duplicate
				continue
			}
			got[e.rv] = true
			fromSend.ObserveAt(sentKey, e.at, e.at.Sub(sent[e.rv]))
			d := e.at.Sub(ack)
			if d < 0 {
				early++
				d = 0
			}
			delays.ObserveAt(watchKey, e.at, d)
		}
		missing += want - len(got)
	}
	st := delays.Stats(false)
	var ws loadtest.LatencyStat
	if len(st) > 0 {
		ws = st[0]
	}
	r.Latencies = append(r.Latencies, ws)
	r.Latencies = append(r.Latencies, fromSend.Stats(false)...)
	r.Series = append(r.Series, delays.PercentileSeries(time.Second, "watch delay")...)
	r.Series = append(r.Series, fromSend.PercentileSeries(time.Second, "sent to seen")...)
	env.Plots = append(env.Plots, loadtest.PlotSpec{File: "watch-delay.svg", Title: "Watch delay: write acknowledged (or sent) → watcher received",
		YLabel: "ms", Series: []string{"watch delay p50", "watch delay p99", "sent to seen p50", "sent to seen p99"}})
	r.AddFigure("writes", "writes acknowledged", float64(want), "")
	r.AddFigure("writes_per_second", "achieved write rate", float64(started)/c.Duration.Seconds(), "writes/s")
	r.AddFigure("dropped_ticks", "writes skipped because every writer was busy", float64(dropped), "")
	r.AddFigure("events_received", "events received by all watchers (ours)", float64(ws.Count), "")
	r.AddFigure("watch_delay_p50", "watch delay p50", ws.P50.D().Seconds(), "s")
	r.AddFigure("watch_delay_p99", "watch delay p99", ws.P99.D().Seconds(), "s")
	r.AddFigure("events_before_ack", "events received before the write's answer", float64(early), "")
	r.AddFigure("events_missing", "writes a watcher never saw", float64(missing), "")
	r.AddFigure("events_unmatched", "events not matching an acknowledged write", float64(extra), "")
	r.AddVerdict("every watcher saw every write", fmt.Sprintf("%d events", want*c.Watchers), fmt.Sprintf("%d events, %d missing", ws.Count, missing), missing == 0)
	return nil
}

func caughtUp(mu *sync.Mutex, seen [][]seenEvent, acked map[string]time.Time) bool {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		n := 0
		for _, e := range s {
			if _, ok := acked[e.rv]; ok {
				n++
			}
		}
		if n < len(acked) {
			return false
		}
	}
	return true
}
