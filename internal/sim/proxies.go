package sim

import (
	"context"

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
// Proxies run on the real clock whatever Config.Clock is: their latency is
// measured against the wall-clock trigger times the controllers write.
func (s *Sim) startProxies(ctx context.Context) error {
	client := s.proxyClient
	if client == nil {
		client = s.client // a fake clientset decodes nothing
	}
	for _, n := range s.nodes[:min(s.cfg.Proxies, len(s.nodes))] {
		p, err := proxy.New(proxy.Config{
			NodeName:       n.name,
			Backend:        nftables.NewDryRun(nftables.Config{}),
			MinSyncPeriod:  s.cfg.ProxyMinSyncPeriod,
			FullSyncPeriod: -1, // a dry run has no kernel state to drift
			Logger:         s.cfg.Logger.With("proxy", n.name),
			OnProgrammed:   s.proxyLatency.observe,
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
