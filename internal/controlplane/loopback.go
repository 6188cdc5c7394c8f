package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/inmemory"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// The loopback transports (Config.LoopbackTransport).
const (
	// LoopbackMemory calls the handler chain in the same address space
	// (package inmemory): no TCP, TLS or HTTP/2 framing, and the same
	// authentication, authorization, flow control, audit and admission.
	LoopbackMemory = "memory"
	// LoopbackTLS goes over the loopback address like any client.
	LoopbackTLS = "tls"
)

// loopback is how the in-process components reach the API server.
type loopback struct {
	url   string
	caPEM []byte
	// memory is the in-memory transport over the handler chain; nil
	// with LoopbackTLS.
	memory *inmemory.Transport
	log    *slog.Logger
}

// newLoopback builds the components' way to handler (the whole filter
// chain the listener serves). In-memory requests run on base, as the
// listener's do: they end at shutdown.
func newLoopback(cfg Config, creds *pki.Credentials, handler http.Handler, base context.Context) (*loopback, error) {
	l := &loopback{url: pki.ServerURL(cfg.BindAddress, cfg.SecurePort), caPEM: creds.CAPEM, log: cfg.Logger}
	if cfg.LoopbackTransport != LoopbackMemory {
		return l, nil
	}
	var err error
	l.memory, err = inmemory.New(inmemory.Config{Handler: handler, BaseContext: base, Logger: cfg.Logger.With("component", "inmemory-loopback")})
	return l, err
}

// close ends the in-memory requests and waits for their handlers, for at
// most timeout: before the caches and the store they read stop.
func (l *loopback) close(timeout time.Duration) {
	if l.memory == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := l.memory.Shutdown(ctx); err != nil {
		l.log.Warn("in-memory loopback requests still running at shutdown", "err", err)
	}
}

// config is the client configuration of an in-process component
// authenticating with token.
//
// The in-memory transport goes in WrapTransport, replacing the TLS one
// client-go builds (and never dials), rather than in Transport, which
// client-go refuses beside a CA: the CA stays in the configuration,
// because configurations derived with rest.AnonymousClientConfig keep
// only it (it drops Transport and WrapTransport, which may carry
// credentials). The controllers' ServiceAccount clients are such
// configurations: they reach the server over TLS, and the
// root-ca-cert-publisher publishes the CA it finds here.
// rest.CopyConfig keeps WrapTransport: everything else the components
// derive stays in memory.
func (l *loopback) config(token string) *rest.Config {
	rc := &rest.Config{
		Host:            l.url,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: l.caPEM},
		// In-process components are trusted peers of the server; their
		// rate limit is the server's inflight limits, not a client one.
		QPS:   5000,
		Burst: 10000,
	}
	if mem := l.memory; mem != nil {
		rc.WrapTransport = func(http.RoundTripper) http.RoundTripper { return mem }
	}
	return rc
}

// loopbackConfig is the client configuration in-process component c
// uses: its loopback token over lb.
func loopbackConfig(lb *loopback, tokens *componentTokens, c Component) (*rest.Config, error) {
	tok, ok := tokens.byName[c.Name]
	if !ok {
		return nil, fmt.Errorf("component %s has no identity", c.Name)
	}
	return lb.config(tok), nil
}
