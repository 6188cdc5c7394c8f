package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// EventRecorder is the part of client-go's record.EventRecorder the proxier
// uses to report Service ports it cannot program.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// DefaultMinSyncPeriod is the proxy's batching period when none is given.
const DefaultMinSyncPeriod = 100 * time.Millisecond

// Config configures a Proxier. Zero fields take the stated defaults.
type Config struct {
	NodeName string   // required
	Families []Family // default IPv4 and IPv6
	// MinSyncPeriod bounds how often the backend is called (default
	// DefaultMinSyncPeriod): events within it are batched into one
	// transaction.
	MinSyncPeriod time.Duration
	// SyncPeriod is the longest time between two syncs (default 30s).
	SyncPeriod time.Duration
	// FullSyncPeriod is how often everything is rewritten to repair drift
	// (default 1h; negative disables it).
	FullSyncPeriod time.Duration
	Backend        Backend // required
	Recorder       EventRecorder
	Metrics        *Metrics // default: unregistered series
	Logger         *slog.Logger
	Clock          clock.Clock
	// OnProgrammed, if set, is called with each network programming latency
	// (EndpointSlice trigger time → rules in place) as it is observed.
	OnProgrammed func(time.Duration)
	// ServeHealthCheckNodePorts opens an HTTP server on the
	// healthCheckNodePort of every LoadBalancer Service with
	// externalTrafficPolicy Local (servicehealth.go), listening on
	// HealthCheckHost (default all addresses). Off by default: the
	// simulator's many proxies share one host.
	ServeHealthCheckNodePorts bool
	HealthCheckHost           string
	// SyncTurns, if set, is acquired (weight 1) around each sync: proxiers
	// sharing one process (the simulator's) then take turns, rather than
	// thousands computing at once and starving the process's other work.
	SyncTurns *semaphore.Weighted
}

func (c *Config) setDefaults() error {
	if c.NodeName == "" || c.Backend == nil {
		return errors.New("proxy: NodeName and Backend are required")
	}
	if len(c.Families) == 0 {
		c.Families = []Family{IPv4, IPv6}
	}
	if c.MinSyncPeriod == 0 {
		c.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = 30 * time.Second
	}
	if c.FullSyncPeriod == 0 {
		c.FullSyncPeriod = time.Hour
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// Proxier keeps the Services and EndpointSlices it is told about and turns
// the changed ones into ServiceViews for the Backend. Its On* methods are
// safe for concurrent use (informer handlers call them).
type Proxier struct {
	cfg    Config
	runner *runner

	mu struct {
		sync.Mutex
		services map[types.NamespacedName]*v1.Service
		slices   map[types.NamespacedName]map[string]*discovery.EndpointSlice
		zone     string
		// dirty holds Services whose view must be recomputed; triggers
		// their pending EndpointSlice trigger times.
		dirty    map[types.NamespacedName]struct{}
		triggers map[types.NamespacedName][]time.Time
		synced   bool // informers have listed once: syncing may begin
		node     *v1.Node
		// nodeIPs are the node's InternalIP and ExternalIP addresses.
		nodeIPs []netip.Addr
		// queuedAt is when the oldest change not yet programmed arrived
		// (zero: none pending); syncedAt when a sync last succeeded.
		queuedAt, syncedAt time.Time
	}
	// started is when the proxier was made: changes triggered before it
	// are not this proxy's programming latency (upstream ignores them too).
	started time.Time
	// Owned by the sync loop only.
	claims   *claims
	skipped  map[types.NamespacedName][]string
	lastFull time.Time
	// health serves health check node ports (nil: off); hcPorts and
	// hcLocal are what it serves, owned by the sync loop.
	health  *serviceHealth
	hcPorts map[types.NamespacedName]uint16
	hcLocal map[types.NamespacedName]int
}

// New validates cfg and returns a Proxier; call Run to start syncing.
func New(cfg Config) (*Proxier, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	p := &Proxier{cfg: cfg, claims: newClaims(), skipped: map[types.NamespacedName][]string{}, started: cfg.Clock.Now()}
	p.mu.services = map[types.NamespacedName]*v1.Service{}
	p.mu.slices = map[types.NamespacedName]map[string]*discovery.EndpointSlice{}
	p.mu.dirty = map[types.NamespacedName]struct{}{}
	p.mu.triggers = map[types.NamespacedName][]time.Time{}
	p.runner = newRunner(p.sync, cfg.MinSyncPeriod, cfg.SyncPeriod, cfg.Clock)
	if cfg.ServeHealthCheckNodePorts {
		p.health = newServiceHealth(cfg.NodeName, cfg.HealthCheckHost, cfg.Recorder, cfg.Logger, func() bool { return p.Health().Healthy })
		p.hcPorts, p.hcLocal = map[types.NamespacedName]uint16{}, map[types.NamespacedName]int{}
	}
	return p, nil
}

// Run syncs until ctx ends, then closes the health check servers.
func (p *Proxier) Run(ctx context.Context) {
	defer p.Close()
	p.lastFull = p.cfg.Clock.Now()
	p.runner.loop(ctx)
}

// SetSynced tells the proxier its informers have listed everything, so a
// sync now programs a complete view rather than a partial one.
func (p *Proxier) SetSynced() {
	p.mu.Lock()
	p.mu.synced = true
	p.mu.Unlock()
	p.runner.Run()
}

// OnService records a Service's new state (nil svc with key: deleted).
func (p *Proxier) OnService(key types.NamespacedName, svc *v1.Service) {
	p.mu.Lock()
	if svc == nil {
		delete(p.mu.services, key)
	} else {
		p.mu.services[key] = svc
	}
	p.mu.dirty[key] = struct{}{}
	p.mu.Unlock()
	p.cfg.Metrics.ServiceChanges.Inc()
	p.queued()
}

// OnEndpointSlice records an EndpointSlice's new state (deleted: true when
// it is gone).
func (p *Proxier) OnEndpointSlice(slice *discovery.EndpointSlice, deleted bool) {
	svcName := slice.Labels[discovery.LabelServiceName]
	if svcName == "" {
		return
	}
	key := types.NamespacedName{Namespace: slice.Namespace, Name: svcName}
	p.mu.Lock()
	m := p.mu.slices[key]
	if deleted {
		delete(m, slice.Name)
		if len(m) == 0 {
			delete(p.mu.slices, key)
		}
	} else {
		if m == nil {
			m = map[string]*discovery.EndpointSlice{}
			p.mu.slices[key] = m
		}
		m[slice.Name] = slice
		if s := slice.Annotations[v1.EndpointsLastChangeTriggerTime]; s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.After(p.started) {
				p.mu.triggers[key] = append(p.mu.triggers[key], t)
			}
		}
	}
	p.mu.dirty[key] = struct{}{}
	p.mu.Unlock()
	p.cfg.Metrics.EndpointChanges.Inc()
	p.queued()
}

// OnNode records the node (its health decides /healthz) and its topology
// zone; a zone change recomputes every Service. A nil node: it is gone.
func (p *Proxier) OnNode(node *v1.Node) {
	var zone string
	var ips []netip.Addr
	if node != nil {
		zone = node.Labels[v1.LabelTopologyZone]
		for _, a := range node.Status.Addresses {
			if a.Type != v1.NodeInternalIP && a.Type != v1.NodeExternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				ips = append(ips, ip.Unmap())
			}
		}
	}
	p.mu.Lock()
	p.mu.node = node
	changed := zone != p.mu.zone || !slices.Equal(ips, p.mu.nodeIPs)
	p.mu.zone, p.mu.nodeIPs = zone, ips
	if changed {
		for k := range p.mu.services {
			p.mu.dirty[k] = struct{}{}
		}
	}
	p.mu.Unlock()
	if changed {
		p.queued()
	}
}

func (p *Proxier) queued() {
	p.mu.Lock()
	if p.mu.queuedAt.IsZero() {
		p.mu.queuedAt = p.cfg.Clock.Now()
	}
	p.mu.Unlock()
	p.cfg.Metrics.LastQueued.SetToCurrentTime()
	p.runner.Run()
}

// sync computes the dirty Services' views and hands them to the backend.
func (p *Proxier) sync(ctx context.Context) {
	if t := p.cfg.SyncTurns; t != nil {
		if err := t.Acquire(ctx, 1); err != nil {
			return // ctx ended
		}
		defer t.Release(1)
	}
	p.mu.Lock()
	if !p.mu.synced {
		p.mu.Unlock()
		return
	}
	dirty, triggers, queuedAt := p.mu.dirty, p.mu.triggers, p.mu.queuedAt
	p.mu.dirty, p.mu.triggers, p.mu.queuedAt = map[types.NamespacedName]struct{}{}, map[types.NamespacedName][]time.Time{}, time.Time{}
	changes := make(map[types.NamespacedName]*ServiceView, len(dirty))
	for key := range dirty {
		changes[key] = p.viewLocked(key)
	}
	p.mu.Unlock()

	p.resolveConflicts(changes)

	start := p.cfg.Clock.Now()
	kind := "partial"
	var res SyncResult
	var err error
	if p.cfg.FullSyncPeriod > 0 && start.Sub(p.lastFull) >= p.cfg.FullSyncPeriod {
		kind = "full"
		if res, err = p.cfg.Backend.Sync(ctx, changes); err == nil {
			var r2 SyncResult
			r2, err = p.cfg.Backend.Resync(ctx)
			res = res.Add(r2)
			if err == nil {
				p.lastFull = start
			}
		}
	} else if len(changes) > 0 {
		res, err = p.cfg.Backend.Sync(ctx, changes)
	}
	if err != nil {
		p.cfg.Metrics.SyncFailures.Inc()
		p.cfg.Logger.Error("programming service rules failed; keeping the previous rules and retrying", "services", len(changes), "err", err)
		p.mu.Lock()
		for k := range dirty {
			p.mu.dirty[k] = struct{}{}
		}
		for k, ts := range triggers {
			p.mu.triggers[k] = append(ts, p.mu.triggers[k]...)
		}
		if p.mu.queuedAt.IsZero() || (!queuedAt.IsZero() && queuedAt.Before(p.mu.queuedAt)) {
			p.mu.queuedAt = queuedAt
		}
		p.mu.Unlock()
		p.runner.Run()
		return
	}
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	p.mu.syncedAt = now
	p.mu.Unlock()
	p.cfg.Metrics.SyncDuration.WithLabelValues(kind).Observe(now.Sub(start).Seconds())
	p.cfg.Metrics.LastSync.Set(float64(now.UnixNano()) / 1e9)
	p.cfg.Metrics.ObjectsChanged.WithLabelValues("element").Add(float64(res.Elements))
	p.cfg.Metrics.ObjectsChanged.WithLabelValues("chain").Add(float64(res.Chains))
	p.cfg.Metrics.ObjectsChanged.WithLabelValues("map").Add(float64(res.Maps))
	for _, ts := range triggers {
		for _, t := range ts {
			d := now.Sub(t)
			p.cfg.Metrics.NetworkProgramming.Observe(d.Seconds())
			if p.cfg.OnProgrammed != nil {
				p.cfg.OnProgrammed(d)
			}
		}
	}
	p.reportSkipped(changes)
	p.syncHealthChecks(changes)
}

// syncHealthChecks brings the health check node port servers up to date
// with the programmed views. Every sync calls it, so a port that failed to
// open is retried at least every SyncPeriod.
func (p *Proxier) syncHealthChecks(changes map[types.NamespacedName]*ServiceView) {
	if p.health == nil {
		return
	}
	for key, v := range changes {
		if v == nil || v.HealthCheckNodePort == 0 {
			delete(p.hcPorts, key)
			delete(p.hcLocal, key)
			continue
		}
		p.hcPorts[key], p.hcLocal[key] = v.HealthCheckNodePort, v.LocalReady
	}
	p.health.sync(p.hcPorts, p.hcLocal)
}

// viewLocked computes one Service's view from the stored objects.
func (p *Proxier) viewLocked(key types.NamespacedName) *ServiceView {
	svc := p.mu.services[key]
	if svc == nil {
		return nil
	}
	ports, skipped := buildPorts(svc, p.cfg.Families)
	if ports == nil && skipped == nil {
		return nil
	}
	allowFromNode(ports, p.mu.nodeIPs)
	var sl []*discovery.EndpointSlice
	for _, s := range p.mu.slices[key] {
		sl = append(sl, s)
	}
	// Map order is random; a fixed order keeps deduplication deterministic.
	slices.SortFunc(sl, func(a, b *discovery.EndpointSlice) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	v := &ServiceView{Name: key, Skipped: skipped}
	if hc := svc.Spec.HealthCheckNodePort; svc.Spec.Type == v1.ServiceTypeLoadBalancer &&
		svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && hc > 0 && hc <= 65535 {
		v.HealthCheckNodePort = uint16(hc)
	}
	// Upstream counts a local pod serving two ports once.
	var localReady map[netip.Addr]struct{}
	for i := range ports {
		sp := &ports[i]
		if !p.cfg.Backend.Supports(sp.Name.Protocol) {
			v.Skipped = append(v.Skipped, fmt.Sprintf("%s: protocol %s is not supported by the proxy's backend", sp.Name, sp.Name.Protocol))
			continue
		}
		eps := endpointsFor(sp, sl, p.cfg.NodeName)
		for _, e := range eps {
			if e.Local && e.Ready {
				if localReady == nil {
					localReady = map[netip.Addr]struct{}{}
				}
				localReady[e.Addr] = struct{}{}
			}
		}
		cluster, local, any := categorize(eps, sp, p.cfg.NodeName, p.mu.zone)
		v.Ports = append(v.Ports, PortView{ServicePort: *sp, Cluster: cluster, Local: local, HasAny: any})
	}
	v.LocalReady = len(localReady)
	return v
}

// allowFromNode lets the load balancer IPs themselves through the source
// ranges of ports whose ranges hold one of the node's addresses, as
// upstream does: a load balancer IP is often also a local address of the
// node, and then the node's own request to it loops back with the load
// balancer IP as its source.
func allowFromNode(ports []ServicePort, nodeIPs []netip.Addr) {
	for i := range ports {
		sp := &ports[i]
		if len(sp.SourceRanges) == 0 {
			continue
		}
		holds := slices.ContainsFunc(nodeIPs, func(ip netip.Addr) bool {
			return slices.ContainsFunc(sp.SourceRanges, func(r netip.Prefix) bool { return r.Contains(ip) })
		})
		if !holds {
			continue
		}
		// The ranges are shared by the Service's ports: extend a copy.
		ranges := slices.Clone(sp.SourceRanges)
		for _, a := range sp.FirewallIPs {
			ranges = append(ranges, netip.PrefixFrom(a, a.BitLen()))
		}
		sp.SourceRanges = ranges
	}
}

// reportSkipped emits an event the first time a port becomes unprogrammable
// and keeps the skipped-ports gauge current.
func (p *Proxier) reportSkipped(changes map[types.NamespacedName]*ServiceView) {
	for key, v := range changes {
		var now []string
		if v != nil {
			now = v.Skipped
		}
		before := p.skipped[key]
		for _, msg := range now {
			if slices.Contains(before, msg) {
				continue
			}
			p.cfg.Logger.Warn("skipping service port", "service", key, "reason", msg)
			p.mu.Lock()
			svc := p.mu.services[key]
			p.mu.Unlock()
			if p.cfg.Recorder != nil && svc != nil {
				p.cfg.Recorder.Eventf(svc, v1.EventTypeWarning, "ServicePortNotProgrammed", "%s", msg)
			}
		}
		if len(now) == 0 {
			delete(p.skipped, key)
		} else {
			p.skipped[key] = now
		}
	}
	n := 0
	for _, s := range p.skipped {
		n += len(s)
	}
	p.cfg.Metrics.SkippedPorts.WithLabelValues("unprogrammable").Set(float64(n))
}

// Sync runs one sync now, on the caller's goroutine. Tests and benchmarks
// use it; it must not run concurrently with Run.
func (p *Proxier) Sync(ctx context.Context) { p.sync(ctx) }

// Healthy is Health as an error saying why the proxy is not healthy.
func (p *Proxier) Healthy() error {
	if p.Health().Healthy {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.synced {
		return errors.New("informers have not synced yet")
	}
	return fmt.Errorf("changes queued %s ago are not programmed yet (last successful sync %s)",
		p.cfg.Clock.Since(p.mu.queuedAt).Round(time.Second), p.mu.syncedAt.Format(time.RFC3339))
}
