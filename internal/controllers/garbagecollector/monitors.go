package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	"github.com/myriad-k8s/myriad/internal/controllers/resources"
)

// ownerIndex indexes objects by the UIDs of their owners.
const ownerIndex = "gc-owner-uid"

func ownerUIDs(obj any) ([]string, error) {
	m, ok := objectMeta(obj)
	if !ok || len(m.OwnerReferences) == 0 {
		return nil, nil
	}
	out := make([]string, len(m.OwnerReferences))
	for i, r := range m.OwnerReferences {
		out[i] = string(r.UID)
	}
	return out, nil
}

// ignored resources are never garbage collected (upstream ignores events:
// high churn, never owned).
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// monitor is one resource's metadata informer.
type monitor struct {
	res      resources.Resource
	informer cache.SharedIndexInformer
}

// monitors is the set of watched resources, by resource and by kind.
type monitors struct {
	mu struct {
		sync.RWMutex
		byGVR  map[schema.GroupVersionResource]*monitor
		byKind map[schema.GroupKind]*monitor
	}
}

func newMonitors() *monitors {
	m := &monitors{}
	m.mu.byGVR = map[schema.GroupVersionResource]*monitor{}
	m.mu.byKind = map[schema.GroupKind]*monitor{}
	return m
}

func (m *monitors) all() []*monitor {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*monitor, 0, len(m.mu.byGVR))
	for _, mon := range m.mu.byGVR {
		out = append(out, mon)
	}
	return out
}

func (m *monitors) forKind(gk schema.GroupKind) *monitor {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.byKind[gk]
}

func (m *monitors) forGVR(gvr schema.GroupVersionResource) *monitor {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.byGVR[gvr]
}

// synced reports whether every monitor's cache has synced.
func (m *monitors) synced() bool {
	for _, mon := range m.all() {
		if !mon.informer.HasSynced() {
			return false
		}
	}
	return true
}

// sync discovers resources and starts a monitor for each new one.
func (gc *Controller) syncMonitors(ctx context.Context) error {
	found, err := resources.Discover(gc.client.Discovery(), "list", "watch", "delete")
	added, typedAdded := 0, false
	for _, r := range found {
		if ignored[r.GVR.GroupResource()] {
			continue
		}
		if gc.monitors.forGVR(r.GVR) != nil {
			continue
		}
		inf, typed, ierr := gc.informerFor(r.GVR)
		if ierr != nil {
			err = errors.Join(err, fmt.Errorf("watching %s: %w", r.GVR, ierr))
			continue
		}
		typedAdded = typedAdded || typed
		if err := reconcile.AddIndexers(inf, cache.Indexers{ownerIndex: ownerUIDs}); err != nil {
			return fmt.Errorf("indexing %s: %w", r.GVR, err)
		}
		mon := &monitor{res: r, informer: inf}
		if _, err := inf.AddEventHandler(gc.handlers(mon)); err != nil {
			return fmt.Errorf("watching %s: %w", r.GVR, err)
		}
		gc.monitors.mu.Lock()
		gc.monitors.mu.byGVR[r.GVR] = mon
		gc.monitors.mu.byKind[schema.GroupKind{Group: r.GVR.Group, Kind: r.Kind}] = mon
		gc.monitors.mu.Unlock()
		added++
	}
	if added > 0 {
		gc.metadataInformers.Start(ctx.Done())
		if typedAdded {
			gc.typedInformers.Start(ctx.Done())
		}
		gc.recheckUnknownOwners(ctx)
		gc.log.Debug("monitoring resources", "added", added, "total", len(gc.monitors.all()))
	}
	return err
}

// dependents lists the cached objects that name uid as an owner.
func (gc *Controller) dependents(uid string) []item {
	var out []item
	for _, mon := range gc.monitors.all() {
		objs, err := mon.informer.GetIndexer().ByIndex(ownerIndex, uid)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if m, ok := objectMeta(o); ok {
				out = append(out, itemFor(mon.res.GVR, m))
			}
		}
	}
	return out
}

// unknownOwners are dependents whose owner references name a kind the
// collector did not monitor when it looked (a custom resource whose CRD
// it had not discovered yet). Such an owner counts as present, and its
// deletion may come before the monitor does, so the dependents are looked
// at again once their owners' kind is monitored.
type unknownOwners struct {
	mu struct {
		sync.Mutex
		// byKind holds the dependents by their owners' kind; guarded by mu.
		byKind map[schema.GroupKind]map[item]bool
	}
}

// maxUnknownOwners bounds what is remembered per kind: references to a
// kind that never appears must not grow without end.
const maxUnknownOwners = 10000

func (u *unknownOwners) add(gk schema.GroupKind, it item) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.mu.byKind == nil {
		u.mu.byKind = map[schema.GroupKind]map[item]bool{}
	}
	set := u.mu.byKind[gk]
	if set == nil {
		set = map[item]bool{}
		u.mu.byKind[gk] = set
	}
	if len(set) < maxUnknownOwners {
		set[it] = true
	}
}

// take removes and returns the dependents waiting for kinds now monitored.
func (u *unknownOwners) take(known func(schema.GroupKind) bool) []item {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []item
	for gk, set := range u.mu.byKind {
		if !known(gk) {
			continue
		}
		for it := range set {
			out = append(out, it)
		}
		delete(u.mu.byKind, gk)
	}
	return out
}

// recheckUnknownOwners queues the dependents whose owners' kind is now
// monitored, once every monitor has synced (so an owner deleted before
// its kind was monitored is seen to be absent).
func (gc *Controller) recheckUnknownOwners(ctx context.Context) {
	items := gc.unknown.take(func(gk schema.GroupKind) bool { return gc.monitors.forKind(gk) != nil })
	if len(items) == 0 {
		return
	}
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), gc.monitors.synced) {
			return
		}
		for _, it := range items {
			gc.attemptToDelete.Add(it)
		}
	}()
}
