package endpointslice

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/endpointutil"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers.
const Name = "endpointslice"

const (
	// ManagedBy is the managed-by label value upstream's controller uses,
	// so tools that filter on it keep working.
	ManagedBy = "endpointslice-controller.k8s.io"
	// MaxEndpoints is upstream's --max-endpoints-per-slice default.
	MaxEndpoints = 100
	serviceIndex = "endpointslice-service"
)

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// Controller keeps EndpointSlices for selector Services.
type Controller struct {
	reconcile.Base
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	slices   cache.Indexer
	max      int

	mu struct {
		sync.Mutex
		// created holds, per Service, slices this controller created that
		// its cache has not shown yet: syncing before they appear would
		// create duplicates.
		created map[string]map[string]bool
	}
}

// New registers handlers on the Service, Pod and EndpointSlice informers.
func New(c *controllerctx.Context) (*Controller, error) {
	svcInf := c.Informers.Core().V1().Services()
	podInf := c.Informers.Core().V1().Pods()
	sliceInf := c.Informers.Discovery().V1().EndpointSlices()
	nodeInf := c.Informers.Core().V1().Nodes()
	if err := reconcile.AddIndexers(sliceInf.Informer(), cache.Indexers{serviceIndex: func(obj any) ([]string, error) {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
			return nil, nil
		}
		return []string{s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]}, nil
	}}); err != nil {
		return nil, fmt.Errorf("%s: slice index: %w", Name, err)
	}
	ctrl := &Controller{
		services: svcInf.Lister(),
		pods:     podInf.Lister(),
		nodes:    nodeInf.Lister(),
		slices:   sliceInf.Informer().GetIndexer(),
		max:      MaxEndpoints,
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, sliceInf.Informer().HasSynced, nodeInf.Informer().HasSynced}
	ctrl.mu.created = map[string]map[string]bool{}
	add := func(key string) { ctrl.Queue.Add(key) }
	if _, err := svcInf.Informer().AddEventHandler(endpointutil.ServiceHandler(add)); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(endpointutil.PodHandler(ctrl.services, add)); err != nil {
		return nil, err
	}
	// Someone else changing or deleting our slices: repair.
	return ctrl, reconcile.Watch(sliceInf.Informer(), reconcile.Updates|reconcile.Deletes, func(obj any) {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok && s.Labels[discoveryv1.LabelManagedBy] == ManagedBy {
			ctrl.Queue.Add(s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName])
		}
	})
}

// cacheBehind reports whether slices created for key are still missing
// from the cache, forgetting those that arrived.
func (c *Controller) cacheBehind(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.mu.created[key]
	for name := range names {
		ns, _, _ := cache.SplitMetaNamespaceKey(key)
		if _, ok, _ := c.slices.GetByKey(ns + "/" + name); ok {
			delete(names, name)
		}
	}
	if len(names) == 0 {
		delete(c.mu.created, key)
		return false
	}
	return true
}

func (c *Controller) expectCreated(key, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.created[key] == nil {
		c.mu.created[key] = map[string]bool{}
	}
	c.mu.created[key][name] = true
}

func (c *Controller) sync(ctx context.Context, key string) error {
	start := time.Now()
	if c.cacheBehind(key) {
		c.Queue.AddAfter(key, 50*time.Millisecond)
		return nil
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	objs, err := c.slices.ByIndex(serviceIndex, key)
	if err != nil {
		return err
	}
	existing := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		existing = append(existing, o.(*discoveryv1.EndpointSlice))
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !endpointutil.Selects(svc)) {
		return c.apply(ctx, key, nil, nil, existing)
	}
	if err != nil {
		return err
	}
	pods, err := endpointutil.Pods(c.pods, svc)
	if err != nil {
		return err
	}
	p := plan(svc, pods, existing, c.max, c.zoneOf)
	setTriggerTime(lastChangeTriggerTime(svc, pods, existing, start), p.create, p.update)
	for _, s := range p.create {
		s.Labels = sliceLabels(svc)
		s.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}
		s.GenerateName = svc.Name + "-"
		s.Namespace = svc.Namespace
	}
	return c.apply(ctx, key, p.create, p.update, p.delete)
}

// apply writes a plan: creates first, then updates, then deletes, so
// endpoints moving between slices are never missing from all of them.
func (c *Controller) apply(ctx context.Context, key string, create, update, del []*discoveryv1.EndpointSlice) error {
	api := func(ns string) interface {
		Create(context.Context, *discoveryv1.EndpointSlice, metav1.CreateOptions) (*discoveryv1.EndpointSlice, error)
		Update(context.Context, *discoveryv1.EndpointSlice, metav1.UpdateOptions) (*discoveryv1.EndpointSlice, error)
		Delete(context.Context, string, metav1.DeleteOptions) error
	} {
		return c.Client.DiscoveryV1().EndpointSlices(ns)
	}
	for _, s := range create {
		out, err := api(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			return fmt.Errorf("creating slice for %s: %w", key, err)
		}
		c.expectCreated(key, out.Name)
	}
	for _, s := range update {
		if _, err := api(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating slice %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	for _, s := range del {
		if err := api(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting slice %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	if len(create)+len(update)+len(del) > 0 {
		c.Log.Debug("slices written", "service", key, "created", len(create), "updated", len(update), "deleted", len(del))
	}
	return nil
}

// zoneOf is the node's topology.kubernetes.io/zone label, from the cache.
func (c *Controller) zoneOf(node string) string {
	n, err := c.nodes.Get(node)
	if err != nil {
		return ""
	}
	return n.Labels[corev1.LabelTopologyZone]
}

func sliceLabels(svc *corev1.Service) map[string]string {
	l := make(map[string]string, len(svc.Labels)+3)
	for k, v := range svc.Labels {
		l[k] = v
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ManagedBy
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[corev1.IsHeadlessService] = ""
	}
	return l
}
