package resourcequota

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// metadataObjects lists gr's objects in ns from a metadata informer,
// starting one (and its delete handler) the first time gr is asked for;
// until it has synced the quota is retried.
func (c *Controller) metadataObjects(ctx context.Context, gr schema.GroupResource, ns string) ([]runtime.Object, error) {
	if c.metadata == nil || c.discovery == nil {
		return nil, fmt.Errorf("cannot count %s: no metadata informers", gr)
	}
	gvr, err := c.resolve(gr)
	if err != nil {
		return nil, err
	}
	inf := c.metadata.ForResource(gvr)
	c.mu.Lock()
	if !c.mu.watched[gvr] {
		c.mu.watched[gvr] = true
		if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.replenish}); err != nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("watching %s: %w", gvr, err)
		}
		if c.mu.stop != nil {
			c.metadata.Start(c.mu.stop)
		}
	}
	c.mu.Unlock()
	if !inf.Informer().HasSynced() {
		return nil, reconcile.ErrRequeue
	}
	items, err := inf.Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return items, nil
}

// resolve finds the served version of gr through discovery, remembering
// what it found.
func (c *Controller) resolve(gr schema.GroupResource) (schema.GroupVersionResource, error) {
	c.mu.Lock()
	gvr, ok := c.mu.gvrs[gr]
	c.mu.Unlock()
	if ok {
		return gvr, nil
	}
	groups, err := c.discovery.ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("discovering groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != gr.Group {
			continue
		}
		versions := append([]metav1.GroupVersionForDiscovery{g.PreferredVersion}, g.Versions...)
		for _, v := range versions {
			list, err := c.discovery.ServerResourcesForGroupVersion(v.GroupVersion)
			if err != nil {
				continue
			}
			for _, r := range list.APIResources {
				if r.Name == gr.Resource && r.Namespaced {
					gvr = schema.GroupVersionResource{Group: gr.Group, Version: v.Version, Resource: gr.Resource}
					c.mu.Lock()
					c.mu.gvrs[gr] = gvr
					c.mu.Unlock()
					return gvr, nil
				}
			}
		}
	}
	return schema.GroupVersionResource{}, errNotServed
}

// errNotServed: a quota names a resource the API does not serve (yet: a
// CRD may come). Not a failure; it is left out of status.used and looked
// for again at the next recount.
var errNotServed = errors.New("not a served namespaced resource")
