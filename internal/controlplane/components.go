package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// Component is a client of the API that runs in the same process — the
// scheduler and the controller manager in `myriad up`. It talks to the API
// server over the loopback address through client-go, under its own
// identity (a client certificate from the cluster CA), exactly as it would
// from another process: RBAC decides what it may do, never the admin's
// rights.
type Component struct {
	Name string
	// Identity is who the component is (system:kube-scheduler,
	// system:kube-controller-manager). Required.
	Identity pki.Identity
	// Run works until ctx is done; an error ends the whole process, as a
	// crashed component would end its own process.
	Run func(ctx context.Context, loopback *rest.Config, metrics prometheus.Registerer) error
}

// loopbackConfig is the client configuration in-process component c
// uses: a client certificate for its identity.
func loopbackConfig(serverURL string, creds *pki.Credentials, c Component) (*rest.Config, error) {
	if c.Identity.User == "" {
		return nil, fmt.Errorf("component %s has no identity", c.Name)
	}
	rc, err := creds.ClientConfig(serverURL, c.Identity)
	if err != nil {
		return nil, fmt.Errorf("component %s: %w", c.Name, err)
	}
	// In-process components are trusted peers of the server; their rate
	// limit is the server's inflight limits, not a client one.
	rc.QPS, rc.Burst = 5000, 10000
	return rc, nil
}

// runningComponents tracks the components started after the server is ready.
type runningComponents struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

// startComponents runs each component on its own goroutine. A component
// that fails reports on errs; the caller shuts the process down.
func startComponents(components []Component, serverURL string, creds *pki.Credentials, metrics prometheus.Registerer, log *slog.Logger) (*runningComponents, error) {
	configs := make([]*rest.Config, len(components))
	for i, c := range components {
		var err error
		if configs[i], err = loopbackConfig(serverURL, creds, c); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningComponents{cancel: cancel, errs: make(chan error, len(components))}
	for i, c := range components {
		loopback := configs[i]
		rc.wg.Add(1)
		go func() {
			defer rc.wg.Done()
			log.Info("starting component", "component", c.Name)
			err := c.Run(ctx, loopback, metrics)
			if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				rc.errs <- fmt.Errorf("%s: %w", c.Name, err)
			}
		}()
	}
	return rc, nil
}

// stop cancels the components and waits for them (they release their
// leases through the still-running server) until ctx is done.
func (rc *runningComponents) stop(ctx context.Context) {
	rc.cancel()
	done := make(chan struct{})
	go func() { rc.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
