package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// hollowNodes starts n hollow nodes named <prefix>N in this process and
// returns them once all are registered. fullStatus selects the pre-Lease
// heartbeat.
func hollowNodes(ctx context.Context, env *loadtest.Env, prefix string, n int, fullStatus bool) (*sim.Sim, error) {
	return hollowNodesWith(ctx, env, prefix, n, func(c *sim.Config) { c.FullStatusHeartbeat = fullStatus })
}

// hollowNodesWith is hollowNodes with configure adjusting the simulator's
// Config before it starts.
func hollowNodesWith(ctx context.Context, env *loadtest.Env, prefix string, n int, configure func(*sim.Config)) (*sim.Sim, error) {
	cfg := sim.Config{
		RESTConfig: env.RESTConfig,
		Nodes:      n,
		NamePrefix: prefix,
		Logger:     env.Log,
	}
	configure(&cfg)
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("hollow nodes: %w", err)
	}
	env.Progress.Phase("register nodes", int64(n), time.Time{}, nil)
	// Count registrations into the progress line while Start runs.
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		last := 0
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				reg := s.Stats().Registered
				env.Progress.Add(int64(reg - last))
				last = reg
			}
		}
	}()
	err = s.Start(ctx)
	close(done)
	<-polled
	if err != nil {
		return nil, fmt.Errorf("hollow nodes: %w", err)
	}
	return s, nil
}

// deleteNodes deletes the named Nodes and their Leases (best effort), so
// a run against a long-lived server leaves no hollow nodes behind;
// nothing with --keep.
func deleteNodes(ctx context.Context, env *loadtest.Env, names []string) {
	if env.Keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	env.Progress.Phase("delete nodes", int64(len(names)), time.Time{}, nil)
	next := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				if err := env.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					env.Log.Warn("cleanup", "node", name, "err", err)
				}
				if err := env.Client.CoordinationV1().Leases(sim.LeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					env.Log.Warn("cleanup", "lease", name, "err", err)
				}
				env.Progress.Add(1)
			}
		}()
	}
	for _, n := range names {
		next <- n
	}
	close(next)
	wg.Wait()
}
