package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/leaderelect"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// Component is a client of the API that runs in the same process — the
// scheduler and the controller manager in `myriad up`. It talks to the API
// server through client-go (in memory or over the loopback address: see
// Config.LoopbackTransport), under its own identity (a loopback bearer
// token; see componentTokens), exactly as it would from another process:
// RBAC decides what it may do, never the admin's rights.
type Component struct {
	Name string
	// Identity is who the component is (system:kube-scheduler,
	// system:kube-controller-manager). Required.
	Identity pki.Identity
	// Run works until ctx is done; an error ends the whole process, as a
	// crashed component would end its own process — except a lost leader
	// Lease (leaderelect.ErrLeaseLost): the component runs again and
	// stands by, since the API server beside it is still serving (a
	// separate scheduler would exit and be restarted by its supervisor;
	// here that would take the control plane down with it, as it did
	// when a loaded machine delayed one renewal past its deadline).
	// Run must therefore be callable again after it returned. shared is the informer
	// factory every component of the process reads through
	// (sharedinformers.go): use it instead of a factory of one's own.
	Run func(ctx context.Context, loopback *rest.Config, metrics prometheus.Registerer, shared informers.SharedInformerFactory) error
	// ReadsShared makes the shared informers that are not fed from the
	// watch caches list and watch as this component (the controller
	// manager: upstream's reads for all its controllers as itself). When
	// no component sets it, the first component's identity reads.
	ReadsShared bool
}

// componentTokens are the loopback bearer tokens of the in-process
// components, one per component, made fresh at every start and known only
// to this process (as upstream's loopback token for the API server's own
// clients). Bearer tokens rather than client certificates so that every
// component's client shares client-go's one cached transport: the
// scheduler, the controller manager and the controllers' ServiceAccount
// clients multiplex over one HTTP/2 connection, as one process's clients
// should, instead of one connection each.
type componentTokens struct {
	byName map[string]string
	auth   *authn.StaticTokens
}

func newComponentTokens(components []Component) (*componentTokens, error) {
	t := &componentTokens{byName: map[string]string{}}
	users := map[string]*request.User{}
	for _, c := range components {
		if c.Identity.User == "" {
			return nil, fmt.Errorf("component %s has no identity", c.Name)
		}
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("component %s: token: %w", c.Name, err)
		}
		tok := base64.RawURLEncoding.EncodeToString(b)
		t.byName[c.Name] = tok
		users[tok] = &request.User{Name: c.Identity.User, Groups: c.Identity.Groups}
	}
	t.auth = authn.NewStaticTokens(users)
	return t, nil
}

// runningComponents tracks the components started after the server is ready.
type runningComponents struct {
	shared *sharedInformers
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

// standbyAgainDelay is the pause before a component that lost its Lease
// runs again: long enough not to spin, short against a Lease's 15 s.
const standbyAgainDelay = time.Second

// startComponents runs each component on its own goroutine. A component
// that fails reports on errs; the caller shuts the process down.
func startComponents(components []Component, lb *loopback, tokens *componentTokens, caches watchCaches, metrics prometheus.Registerer, log *slog.Logger) (*runningComponents, error) {
	configs := make([]*rest.Config, len(components))
	for i, c := range components {
		var err error
		if configs[i], err = loopbackConfig(lb, tokens, c); err != nil {
			return nil, err
		}
	}
	shared, err := newComponentInformers(components, configs, caches)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningComponents{shared: shared, cancel: cancel, errs: make(chan error, len(components))}
	for i, c := range components {
		loopback := configs[i]
		rc.wg.Add(1)
		go func() {
			defer rc.wg.Done()
			log.Info("starting component", "component", c.Name)
			for {
				err := c.Run(ctx, loopback, metrics, shared.forComponents())
				if errors.Is(err, leaderelect.ErrLeaseLost) && ctx.Err() == nil {
					log.Warn("component lost its leader lease; standing by again", "component", c.Name)
					select {
					case <-ctx.Done():
					case <-time.After(standbyAgainDelay):
					}
					continue
				}
				if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
					rc.errs <- fmt.Errorf("%s: %w", c.Name, err)
				}
				return
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
	go func() { rc.wg.Wait(); rc.shared.stop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
