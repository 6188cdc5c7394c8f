package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn/bootstraptoken"
)

// startBootstrapTokens builds the bootstrap token authenticator
// (--enable-bootstrap-token-auth) over api's Secret cache and starts its
// informer, which api's readiness waits for. stop ends the informer and
// waits for it; call it before api stops.
func startBootstrapTokens(ctx context.Context, api *apiserver.Server, log *slog.Logger) (a *bootstraptoken.Authenticator, stop func(), err error) {
	lw, err := api.ListerWatcher(schema.GroupVersionResource{Version: "v1", Resource: "secrets"})
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap token authentication: %w", err)
	}
	a, err = bootstraptoken.New(lw, bootstraptoken.Options{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	api.AddReadinessCheck("bootstrap-token-authenticator", a.HasSynced)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Run(ctx)
	}()
	return a, func() { cancel(); wg.Wait() }, nil
}
