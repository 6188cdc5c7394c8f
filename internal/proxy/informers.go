package proxy

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// proxyLabelSelector skips what upstream's kube-proxy skips: Services
// handled by another proxy and headless Services (and their slices).
const proxyLabelSelector = "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless"

// Watch feeds p from the API server: its own informers on Services,
// EndpointSlices and this node, as every real kube-proxy holds them. It
// returns once they have listed (and p may sync), or with ctx's error.
// The informers run until ctx ends; the returned wait blocks until they
// have stopped (call it after cancelling ctx).
func Watch(ctx context.Context, client kubernetes.Interface, p *Proxier, resync time.Duration) (wait func(), err error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = proxyLabelSelector }))
	nodes := informers.NewSharedInformerFactoryWithOptions(client, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.cfg.NodeName).String()
		}))
	svc := f.Core().V1().Services().Informer()
	eps := f.Discovery().V1().EndpointSlices().Informer()
	node := nodes.Core().V1().Nodes().Informer()
	onSvc := func(obj any) {
		if s, ok := obj.(*v1.Service); ok {
			p.OnService(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, s)
		}
	}
	if _, err := svc.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onSvc,
		UpdateFunc: func(_, n any) { onSvc(n) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if s, ok := obj.(*v1.Service); ok {
				p.OnService(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, nil)
			}
		},
	}); err != nil {
		return nil, err
	}
	onSlice := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*discovery.EndpointSlice); ok {
			p.OnEndpointSlice(s, deleted)
		}
	}
	if _, err := eps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { onSlice(o, false) },
		UpdateFunc: func(_, n any) { onSlice(n, false) },
		DeleteFunc: func(o any) { onSlice(o, true) },
	}); err != nil {
		return nil, err
	}
	onNode := func(obj any) {
		if n, ok := obj.(*v1.Node); ok {
			p.OnNode(n)
		}
	}
	if _, err := node.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onNode, UpdateFunc: func(_, n any) { onNode(n) }, DeleteFunc: func(any) { p.OnNode(nil) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	nodes.Start(ctx.Done())
	wait = func() { f.Shutdown(); nodes.Shutdown() }
	// The node is not waited for: a proxy on a node not registered yet
	// still forwards (without topology until the node appears).
	if !cache.WaitForCacheSync(ctx.Done(), svc.HasSynced, eps.HasSynced) {
		if err := ctx.Err(); err != nil {
			return wait, err
		}
		return wait, errors.New("proxy: informers did not sync")
	}
	p.SetSynced()
	return wait, nil
}
