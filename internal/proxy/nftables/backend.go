package nftables

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// Config configures a Backend.
type Config struct {
	// Families to program (default IPv4 and IPv6).
	Families []proxy.Family
	// ClusterCIDRs, one per family at most: traffic to a cluster IP from
	// outside them is masqueraded (upstream's --cluster-cidr). Unset: none.
	ClusterCIDRs []netip.Prefix
	// MasqueradeAll masquerades all traffic to cluster IPs, whatever its
	// source (upstream's --masquerade-all); ClusterCIDRs then do not matter.
	MasqueradeAll bool
	// Protocols the kernel can forward (default TCP, UDP and SCTP); ports of
	// other protocols are reported and skipped.
	Protocols []v1.Protocol
	// NetNSFd, if non-zero, programs the tables in that network namespace
	// (an open /var/run/netns/<name>) instead of the caller's.
	NetNSFd int
	// Logger reports what does not fail a sync (stale conntrack entries
	// left behind). Default: discard.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if len(c.Families) == 0 {
		c.Families = []proxy.Family{proxy.IPv4, proxy.IPv6}
	}
	if len(c.Protocols) == 0 {
		c.Protocols = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// writer applies plans to a data path.
type writer interface {
	// apply writes one plan per family as one transaction, or nothing.
	apply(ctx context.Context, t map[proxy.Family]*table, plans map[proxy.Family]*plan) error
	// rewrite writes every table's whole state as one transaction,
	// deleting whatever else is in them.
	rewrite(ctx context.Context, t map[proxy.Family]*table) error
}

// Backend is the nftables proxy backend (proxy.Backend). Sync and Resync
// must not be called concurrently (the proxier's sync loop is their only
// caller); Render may be called from any goroutine.
type Backend struct {
	cfg Config
	w   writer // nil: dry run
	log *slog.Logger
	mu  sync.Mutex
	// tables and rewritePending are guarded by mu. rewritePending: a
	// transaction failed, so the next sync writes the tables whole.
	tables         map[proxy.Family]*table
	rewritePending bool
}

var _ proxy.Backend = (*Backend)(nil)

func newBackend(cfg Config, w writer) *Backend {
	cfg.setDefaults()
	b := &Backend{cfg: cfg, w: w, tables: map[proxy.Family]*table{}, log: cfg.Logger}
	for _, f := range cfg.Families {
		var cidr netip.Prefix
		for _, p := range cfg.ClusterCIDRs {
			if proxy.FamilyOf(p.Addr()) == f {
				cidr = p
			}
		}
		b.tables[f] = newTable(f, masqueradePolicy{all: cfg.MasqueradeAll, clusterCIDR: cidr})
	}
	return b
}

// NewDryRun returns a backend that computes and diffs the same rules as the
// kernel backend but writes nothing.
func NewDryRun(cfg Config) *Backend { return newBackend(cfg, nil) }

// Supports implements proxy.Backend.
func (b *Backend) Supports(p v1.Protocol) bool {
	for _, q := range b.cfg.Protocols {
		if q == p {
			return true
		}
	}
	return false
}

// Sync implements proxy.Backend: it diffs the changed Services' new
// fragments against the programmed ones and writes the difference.
func (b *Backend) Sync(ctx context.Context, changes map[types.NamespacedName]*proxy.ServiceView) (proxy.SyncResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	plans := map[proxy.Family]*plan{}
	var res proxy.SyncResult
	needInit := false
	// A fixed order makes the plans deterministic.
	keys := make([]types.NamespacedName, 0, len(changes))
	for key := range changes {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for fam, t := range b.tables {
		p := newPlan()
		for _, key := range keys {
			v := changes[key]
			old := t.frags[key]
			var next *fragment
			if v != nil {
				var ports []proxy.PortView
				for _, pv := range v.Ports {
					if pv.Family == fam {
						ports = append(ports, pv)
					}
				}
				if len(ports) > 0 {
					next = computeFragment(old, ports, t.masq)
				}
			}
			if old == nil && next == nil {
				continue
			}
			t.diff(p, key, old, next)
		}
		t.finish(p)
		plans[fam] = p
		res = res.Add(p.result())
		res.StaleFlows += len(staleUDPFlows(fam, p))
		needInit = needInit || !t.initialized
	}
	if b.w != nil {
		if needInit || b.rewritePending {
			// The first write, and any after a failed one, writes the
			// tables whole from the desired state.
			for fam, t := range b.tables {
				t.commit(plans[fam])
			}
			if err := b.w.rewrite(ctx, b.tables); err != nil {
				b.rewritePending = true
				return proxy.SyncResult{}, fmt.Errorf("rewriting nftables tables: %w", err)
			}
			b.rewritePending = false
			return res, nil
		}
		if err := b.w.apply(ctx, b.tables, plans); err != nil {
			// The kernel applied none of it: a transaction is atomic. The
			// difference was computed against what the backend believes is
			// programmed; if the kernel drifted from that, the same
			// difference would fail forever, so the desired state is written
			// whole instead (and again on the next sync if that fails too).
			for fam, t := range b.tables {
				t.commit(plans[fam])
			}
			if rerr := b.w.rewrite(ctx, b.tables); rerr != nil {
				b.rewritePending = true
				return proxy.SyncResult{}, fmt.Errorf("programming %d services: %w; then rewriting the tables: %w", len(changes), err, rerr)
			}
			b.log.Warn("an incremental transaction failed; rewrote the tables whole", "services", len(changes), "err", err)
			return res, nil
		}
	}
	for fam, t := range b.tables {
		t.commit(plans[fam])
	}
	return res, nil
}

// Resync implements proxy.Backend: it rewrites everything in one
// transaction.
func (b *Backend) Resync(ctx context.Context) (proxy.SyncResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var res proxy.SyncResult
	for _, t := range b.tables {
		res = res.Add(t.size())
	}
	if b.w == nil {
		return res, nil
	}
	if err := b.w.rewrite(ctx, b.tables); err != nil {
		return proxy.SyncResult{}, fmt.Errorf("rewriting nftables tables: %w", err)
	}
	for _, t := range b.tables {
		t.initialized = true
	}
	return res, nil
}

// Render returns the programmed rules of one family as text.
func (b *Backend) Render(fam proxy.Family) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tables[fam]
	if t == nil {
		return ""
	}
	return t.render()
}

// size counts the objects a full rewrite of t writes.
func (t *table) size() proxy.SyncResult {
	r := proxy.SyncResult{Chains: len(t.baseChains) + len(t.lbs), Maps: len(t.baseMaps), Elements: len(t.hairpin)}
	for _, c := range t.baseChains {
		r.Rules += len(c.rules)
	}
	for _, f := range t.frags {
		r.Chains += len(f.chains)
		r.Elements += len(f.elems)
		for _, g := range f.groups {
			r.Elements += len(g.keys) * len(g.slots)
		}
		for _, rules := range f.chains {
			r.Rules += len(rules)
		}
	}
	return r
}
