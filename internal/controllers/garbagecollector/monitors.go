package garbagecollector

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/resources"
)

// ownerIndex indexes objects by the UIDs of their owners.
const ownerIndex = "gc-owner-uid"

func ownerUIDs(obj any) ([]string, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
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
	added := 0
	for _, r := range found {
		if ignored[r.GVR.GroupResource()] {
			continue
		}
		if gc.monitors.forGVR(r.GVR) != nil {
			continue
		}
		inf := gc.metadataInformers.ForResource(r.GVR).Informer()
		if err := inf.AddIndexers(cache.Indexers{ownerIndex: ownerUIDs}); err != nil {
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
			m := o.(*metav1.PartialObjectMetadata)
			out = append(out, itemFor(mon.res.GVR, m))
		}
	}
	return out
}
