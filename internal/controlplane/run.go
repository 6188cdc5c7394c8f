package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/rbacrestriction"
	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// Run serves the API until ctx is done, then shuts down in order: stop
// accepting, end in-flight requests and watches, stop caches, close the
// store. ready, if not nil, is closed once the server is serving and the
// kubeconfig is written.
func Run(ctx context.Context, cfg Config, ready chan<- struct{}) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	log := cfg.Logger
	files, err := loadSecurityFiles(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	creds, err := pki.EnsureCredentials(cfg.DataDir, pki.Options{BindAddress: cfg.BindAddress, ExtraSANs: cfg.ExtraSANs})
	if err != nil {
		return err
	}
	// Before the API server, which will need the token authenticators for
	// TokenReview; closed last, after in-flight requests are audited.
	// --api-audiences (default: the ServiceAccount issuers) is every
	// token authenticator's, as upstream.
	saOpts := cfg.ServiceAccounts.withDefaults()
	cfg.Authentication.APIAudiences = saOpts.APIAudiences
	// No JWT issuer may claim the ServiceAccount issuers, as upstream.
	cfg.Authentication.DisallowedIssuers = saOpts.Issuers
	sec, err := newSecurity(ctx, cfg, creds)
	if err != nil {
		return err
	}
	defer sec.Close()
	sa, err := newServiceAccounts(cfg)
	if err != nil {
		return err
	}
	kubelet, err := cfg.Kubelet.apiserverConfig(creds)
	if err != nil {
		return err
	}
	start := time.Now()
	stores, err := openStores(ctx, cfg)
	if err != nil {
		return err
	}
	clock := &shutdownClock{log: log}
	defer clock.stop("store", func() { _ = stores.close() })

	metrics := cfg.Metrics
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	scheme, err := registry.NewScheme()
	if err != nil {
		return err
	}
	reg, err := registry.New()
	if err != nil {
		return err
	}
	// Writes of roles and bindings may grant only what the writer holds
	// (upstream's RBAC escalation check), judged by the authorizer built
	// below.
	late := &lateAuthorization{}
	var api *apiserver.Server
	escalation := rbacrestriction.New(late, late, func(ctx context.Context, gvr schema.GroupVersionResource, ns, name, rv string) (k8sruntime.Object, error) {
		return api.GetObject(ctx, gvr, ns, name, rv)
	})
	imageDir, imageTag, err := cacheImages(cfg)
	if err != nil {
		return err
	}
	api, err = apiserver.New(apiserver.Config{
		CacheImageDir: imageDir, CacheImageTag: imageTag,
		Store: stores.main, Shards: stores.shards, CompactionInterval: cfg.Etcd.CompactionInterval, StoreRecordsMetrics: cfg.Storage == "etcd", Registry: reg, Scheme: scheme,
		ServiceClusterIPRange: cfg.ServiceClusterIPRange, ServiceNodePortRange: cfg.ServiceNodePortRange,
		IndexedLabels: cfg.IndexedLabels, EventTTL: cfg.EventTTL, Logger: log.With("component", "apiserver"), Metrics: metrics,
		Version:       versionInfo(),
		PublicAddress: publicAddress(cfg.BindAddress), PublicPort: int32(cfg.SecurePort),
		PodSecurity: files.podSecurity, Encryption: files.encryption,
		AdmissionPlugins: []admission.Interface{escalation},
		ServiceAccounts:  sa.apiserverConfig(),
		Kubelet:          kubelet,
	})
	if err != nil {
		return err
	}
	// The authorizer is built from the server's caches before they start,
	// and the same one guards requests and answers the review APIs.
	authorizer, rules, stopAuthorizer, err := buildAuthorizer(authorizerDeps{ctx: ctx, api: api, cfg: cfg.Authorization, log: log.With("component", "authorizer")})
	if err != nil {
		return err
	}
	late.authorizer, late.rules = authorizer, rules
	saTokens, err := sa.authenticator(api)
	if err != nil {
		stopAuthorizer()
		return err
	}
	compTokens, err := newComponentTokens(cfg.Components)
	if err != nil {
		stopAuthorizer()
		return err
	}
	if cfg.EnableBootstrapTokenAuth {
		bt, stopBootstrapTokens, err := startBootstrapTokens(ctx, api, log.With("component", "bootstrap-token-authenticator"))
		if err != nil {
			stopAuthorizer()
			return err
		}
		// Stopped with the authorizer, before the caches it reads.
		stopAuthz := stopAuthorizer
		stopAuthorizer = func() { stopBootstrapTokens(); stopAuthz() }
		sec.bootstrap = bt
	}
	sec.addServiceAccountTokens(saTokens, compTokens.auth)
	if err := errors.Join(api.SetAuthorization(authorizer, rules), api.SetTokenAuthenticator(sec.tokens)); err != nil {
		stopAuthorizer()
		return err
	}
	agg, err := newAggregator(cfg.DataDir, api, reg, creds, metrics, log)
	if err != nil {
		stopAuthorizer()
		return err
	}
	apf, err := newFlowControl(cfg, api, metrics, log)
	if err != nil {
		stopAuthorizer()
		return err
	}
	if err := api.Start(ctx); err != nil {
		stopAuthorizer()
		return err
	}
	defer clock.stop("caches", api.Stop)
	// Deferred after api.Stop so it runs first: the authorizers' informers
	// read the API server's caches.
	defer clock.stop("authorizer", stopAuthorizer)
	if err := agg.Start(ctx); err != nil {
		agg.Stop()
		return err
	}
	defer clock.stop("aggregator", agg.Stop)
	// Stopped before the caches its informers read (deferred after api.Stop).
	if err := apf.start(ctx); err != nil {
		return err
	}
	defer clock.stop("flow control", apf.stop)

	mux := http.NewServeMux()
	mux.Handle("/", agg.Handler(api))
	mux.Handle("/metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	sa.installDiscovery(mux, pki.ServerURL(cfg.BindAddress, cfg.SecurePort), log)
	apf.install(mux)
	handler, err := buildChain(mux, cfg, creds, sec, authorizer, apf.filter(), metrics, log)
	if err != nil {
		return err
	}

	// Requests (and watches) run on a context that ends at shutdown, so
	// Shutdown does not wait out 30-minute watches.
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	lb, err := newLoopback(cfg, creds, handler, reqCtx)
	if err != nil {
		return err
	}
	// Before the caches and the store (deferred earlier) stop.
	defer clock.stop("loopback", func() { lb.close(cfg.ShutdownTimeout) })
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         creds.TLSConfig(),
		ReadHeaderTimeout: 30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ErrorLog:          nil,
	}
	if err := configureHTTP2(srv); err != nil {
		return err
	}
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort))
	tcpLn, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	ln := trackConns(tcpLn)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(ln, "", "") }()

	if err := waitReady(ctx, api, log); err != nil {
		_ = srv.Close()
		return err
	}
	url := pki.ServerURL(cfg.BindAddress, cfg.SecurePort)
	log.Info("serving", "address", url, "startup", time.Since(start).Round(time.Millisecond))
	if cfg.EnableBootstrapTokenAuth {
		// Only kubeadm-style discovery needs cluster-info: a stored copy
		// that cannot be read or written (say, encrypted with a key no
		// longer configured) is reported, and the control plane serves on.
		if err := ensureClusterInfo(ctx, url, creds); err != nil {
			log.Error("cluster-info not written; nodes cannot discover the cluster from it", "err", err)
		}
	}
	components, err := startComponents(cfg.Components, lb, compTokens, api, metrics, log)
	if err != nil {
		_ = srv.Close()
		return err
	}
	if cfg.WaitForDefaultServiceAccount {
		waitForDefaultServiceAccount(ctx, api, log)
	}
	// The kubeconfig appears when the control plane is usable: scripts
	// and tests wait for it, then create pods at once.
	if err := pki.WriteKubeconfig(cfg.KubeconfigPath(), url, creds); err != nil {
		components.stop(ctx)
		_ = srv.Close()
		return err
	}
	log.Info("ready", "kubeconfig", cfg.KubeconfigPath(), "startup", time.Since(start).Round(time.Millisecond))
	if ready != nil {
		close(ready)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("serving: %w", err)
		}
	case err := <-components.errs:
		runErr = err
	}
	log.Info("shutting down")
	clock.begin()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// Components go first, while the server still answers, so they can
	// release their leases and a standby elsewhere takes over at once.
	clock.stop("components", func() { components.stop(shutdownCtx) })
	// Watches end with a bookmark at the revision they reached, so that
	// clients resume after a restart instead of relisting.
	bookmarkCtx, cancelBookmarks := context.WithTimeout(shutdownCtx, time.Second)
	clock.stop("final bookmarks", func() { api.BookmarkWatchers(bookmarkCtx) })
	cancelBookmarks()
	clock.stop("https server", func() {
		// GOAWAY first, then the requests end: a client whose watch ends
		// on a connection that has not said goodbye asks again on it at
		// once. With 10,000 hollow nodes those new watches, through
		// authentication, flow control and the handlers, kept this step
		// busy 2.4–3.5 s (perf of a stop; 0.6 s in this order). Past
		// httpsFlush the TCP connections still open are closed
		// (connTracker); clients reconnect either way.
		graceCtx, cancelGrace := context.WithTimeout(shutdownCtx, httpsGrace)
		defer cancelGrace()
		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(graceCtx) }()
		time.Sleep(httpsGoaway)
		cancelRequests()
		var err error
		select {
		case err = <-shut:
		case <-time.After(httpsFlush):
			n := ln.closeAll()
			log.Info("closed the connections left after the flush", "connections", n)
			err = <-shut
		}
		if err != nil {
			_ = srv.Close()
		}
	})
	return runErr
}

// At shutdown the HTTPS server sends its GOAWAYs, httpsGoaway later ends
// every request, httpsFlush after that closes the connections left, and
// waits at most httpsGrace in all.
const (
	httpsGoaway = 50 * time.Millisecond
	httpsFlush  = 100 * time.Millisecond
	httpsGrace  = 500 * time.Millisecond
)

// waitForDefaultServiceAccount waits, for at most 20 seconds, until the
// serviceaccount controller has made the "default" namespace's "default"
// ServiceAccount: before it exists, the ServiceAccount admission plugin
// refuses pods there, so an all-in-one control plane is not usable yet.
func waitForDefaultServiceAccount(ctx context.Context, api *apiserver.Server, log *slog.Logger) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	deadline := time.Now().Add(20 * time.Second)
	for ctx.Err() == nil {
		if _, err := api.GetObject(ctx, gvr, "default", "default", "0"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			log.Warn("the default ServiceAccount did not appear within 20 s; pods in namespace default are refused until it does")
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady waits until every cache is synced and every readiness check
// passes, saying every few seconds what it is still waiting for: a start
// under load (a restart storm) can take long, and the log tells which part.
func waitReady(ctx context.Context, api *apiserver.Server, log *slog.Logger) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	start, lastLog := time.Now(), time.Now()
	for {
		err := api.NotReady()
		if err == nil {
			return nil
		}
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			log.Info("waiting for readiness", "reason", err, "waited", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// gitVersion is the Kubernetes API level Myriad serves; kubectl compares
// it with its own version for its skew warning.
const gitVersion = "v1.34.0-myriad.0"

func versionInfo() version.Info {
	return version.Info{Major: "1", Minor: "34", GitVersion: gitVersion, Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version()}
}

// publicAddress is the address the kubernetes Service's endpoints name:
// the bind address, or loopback when bound to every interface.
func publicAddress(bind string) netip.Addr {
	a, err := netip.ParseAddr(bind)
	if err != nil || a.IsUnspecified() {
		return netip.MustParseAddr("127.0.0.1")
	}
	return a
}
