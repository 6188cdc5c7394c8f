package sim

import (
	"context"
	"runtime"

	"golang.org/x/sync/semaphore"

	"github.com/myriad-k8s/myriad/internal/proxy"
	"github.com/myriad-k8s/myriad/internal/proxy/nftables"
)

// startProxies runs a dry-run service proxy on each of the first
// Config.Proxies nodes. Each holds its own informers (watches of Services,
// EndpointSlices and its Node), as every real kube-proxy does: the point is
// the control plane's watch fan-out, so they deliberately share nothing but
// the clientset's connections and the decoding of identical watch events
// (proxydecode.go: a real proxy decodes on its own node's CPU). Each
// proxy computes and diffs the same nf_tables changes as a real one, and
// reports its network programming latency (EndpointSlice trigger time →
// rules computed) to Stats.
//
// The proxies take turns to sync, as many at once as the process has
// threads: each real proxy has its own node's CPU, and 10,000 computing at
// once here left the simulated nodes' heartbeats waiting behind them until
// their Leases expired (docs/bench/proxy.md).
//
// Proxies run on the real clock whatever Config.Clock is: their latency is
// measured against the wall-clock trigger times the controllers write.
func (s *Sim) startProxies(ctx context.Context) error {
	client := s.proxyClient
	if client == nil {
		client = s.client // a fake clientset decodes nothing
	}
	turns := semaphore.NewWeighted(int64(runtime.GOMAXPROCS(0)))
	for _, n := range s.nodes[:min(s.cfg.Proxies, len(s.nodes))] {
		p, err := proxy.New(proxy.Config{
			NodeName:       n.name,
			Backend:        nftables.NewDryRun(nftables.Config{}),
			MinSyncPeriod:  s.cfg.ProxyMinSyncPeriod,
			FullSyncPeriod: -1, // a dry run has no kernel state to drift
			Logger:         s.cfg.Logger.With("proxy", n.name),
			OnProgrammed:   s.proxyLatency.observe,
			SyncTurns:      turns,
		})
		if err != nil {
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			wait, err := proxy.Watch(ctx, client, p, 0)
			if wait != nil {
				defer wait()
			}
			if err != nil {
				if ctx.Err() == nil {
					s.cfg.Logger.Error("proxy informers failed", "node", n.name, "err", err)
				}
				return
			}
			p.Run(ctx)
		}()
	}
	return nil
}
