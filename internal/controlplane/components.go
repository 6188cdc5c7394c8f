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
// server over the loopback address with the admin credentials, through
// client-go, exactly as it would from another process.
type Component struct {
	Name string
	// Run works until ctx is done; an error ends the whole process, as a
	// crashed component would end its own process.
	Run func(ctx context.Context, loopback *rest.Config, metrics prometheus.Registerer) error
}

// loopbackConfig is the client configuration in-process components use.
func loopbackConfig(serverURL string, creds *pki.Credentials) *rest.Config {
	return &rest.Config{
		Host:            serverURL,
		BearerToken:     creds.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: creds.CAPEM},
		// In-process components are trusted peers of the server; their
		// rate limit is the server's inflight limits, not a client one.
		QPS:   5000,
		Burst: 10000,
	}
}

// runningComponents tracks the components started after the server is ready.
type runningComponents struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

// startComponents runs each component on its own goroutine. A component
// that fails reports on errs; the caller shuts the process down.
func startComponents(components []Component, loopback *rest.Config, metrics prometheus.Registerer, log *slog.Logger) *runningComponents {
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningComponents{cancel: cancel, errs: make(chan error, len(components))}
	for _, c := range components {
		rc.wg.Add(1)
		go func() {
			defer rc.wg.Done()
			log.Info("starting component", "component", c.Name)
			err := c.Run(ctx, rest.CopyConfig(loopback), metrics)
			if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				rc.errs <- fmt.Errorf("%s: %w", c.Name, err)
			}
		}()
	}
	return rc
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
