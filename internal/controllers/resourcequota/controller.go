package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	"github.com/myriad-k8s/myriad/internal/quota"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "resourcequota"

const (
	// ResyncPeriod is how often every quota is recounted (upstream's
	// --resource-quota-sync-period).
	ResyncPeriod = 5 * time.Minute
	// replenishDelay coalesces the recounts a burst of deletions asks
	// for.
	replenishDelay = 200 * time.Millisecond
)

// Descriptor registers the controller with the manager (upstream runs 5
// workers: --concurrent-resource-quota-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// typed are the resources counted from typed informers.
type typed struct {
	e    quota.Evaluator
	list func(ns string) ([]runtime.Object, error)
}

// Controller is the resource quota controller.
type Controller struct {
	reconcile.Base
	quotas    corelisters.ResourceQuotaLister
	typed     []typed
	metadata  metadatainformer.SharedInformerFactory
	discovery discovery.DiscoveryInterface
	clock     clock.WithTicker
	resync    time.Duration

	mu struct {
		sync.Mutex
		// gvrs maps the resources count/ quotas named to what serves
		// them; watched holds those with a metadata informer.
		gvrs    map[schema.GroupResource]schema.GroupVersionResource
		watched map[schema.GroupVersionResource]bool
		// stop is the Run context's, for informers started on demand.
		stop <-chan struct{}
	}
}

// New registers the controller's handlers on the shared informers.
func New(c *controllerctx.Context) (*Controller, error) {
	core := c.Informers.Core().V1()
	rqInf := core.ResourceQuotas()
	podInf, svcInf, pvcInf := core.Pods(), core.Services(), core.PersistentVolumeClaims()
	ctrl := &Controller{
		quotas:   rqInf.Lister(),
		metadata: c.MetadataInformers,
		clock:    c.Clock,
		resync:   ResyncPeriod,
	}
	if c.Client != nil {
		ctrl.discovery = c.Client.Discovery()
	}
	ctrl.mu.gvrs = map[schema.GroupResource]schema.GroupVersionResource{}
	ctrl.mu.watched = map[schema.GroupVersionResource]bool{}
	// Only resources whose usage is more than a count are typed (and
	// resourcequotas, whose informer the controller has anyway). ConfigMaps
	// and Secrets are counted like any count/ resource, from the metadata
	// informer the garbage collector shares: a typed informer kept every
	// ConfigMap's and Secret's data in this process, ~520 MB at 320,000 of
	// each, for a count.
	ctrl.typed = []typed{
		{quota.For(quota.Pods), listed(podInf.Lister().Pods)},
		{quota.For(quota.Services), listed(svcInf.Lister().Services)},
		{quota.For(quota.PersistentVolumeClaims), listed(pvcInf.Lister().PersistentVolumeClaims)},
		{quota.For(schema.GroupResource{Resource: "resourcequotas"}), listed(rqInf.Lister().ResourceQuotas)},
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{
		rqInf.Informer().HasSynced, podInf.Informer().HasSynced, svcInf.Informer().HasSynced, pvcInf.Informer().HasSynced,
	}
	// Objects that use less or are gone give their share back; see doc.go
	// for why creations do not recount.
	usageDropped := func(e quota.Evaluator) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, cur any) { ctrl.updated(e, old, cur) },
			DeleteFunc: ctrl.replenish,
		}
	}
	return ctrl, reconcile.AddHandlers(
		reconcile.Handler{Informer: rqInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    ctrl.Enqueue,
			UpdateFunc: ctrl.quotaUpdated,
			DeleteFunc: ctrl.replenish, // count/resourcequotas of the others
		}},
		reconcile.Handler{Informer: podInf.Informer(), Handler: usageDropped(quota.For(quota.Pods))},
		reconcile.Handler{Informer: svcInf.Informer(), Handler: usageDropped(quota.For(quota.Services))},
		reconcile.Handler{Informer: pvcInf.Informer(), Handler: usageDropped(quota.For(quota.PersistentVolumeClaims))},
	)
}

// listed adapts a namespaced lister to a list of runtime.Objects.
func listed[T runtime.Object, L interface {
	List(labels.Selector) ([]T, error)
}](ns func(string) L) func(string) ([]runtime.Object, error) {
	return func(namespace string) ([]runtime.Object, error) {
		items, err := ns(namespace).List(labels.Everything())
		out := make([]runtime.Object, len(items))
		for i, it := range items {
			out[i] = it
		}
		return out, err
	}
}

// Run works until ctx is done, recounting every quota each resync period.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.mu.Lock()
	c.mu.stop = ctx.Done()
	c.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { c.resyncLoop(ctx) })
	c.Base.Run(ctx, workers)
	wg.Wait()
}

func (c *Controller) resyncLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			qs, err := c.quotas.List(labels.Everything())
			if err != nil {
				continue
			}
			for _, q := range qs {
				c.Enqueue(q)
			}
		}
	}
}

// quotaUpdated recounts a quota whose spec changed or whose status does
// not yet account for its spec; its own status writes change neither.
func (c *Controller) quotaUpdated(old, cur any) {
	o, ok1 := old.(*corev1.ResourceQuota)
	q, ok2 := cur.(*corev1.ResourceQuota)
	if !ok1 || !ok2 {
		return
	}
	if !apiequality.Semantic.DeepEqual(o.Spec, q.Spec) || needsCount(q) {
		c.Enqueue(q)
	}
}

// needsCount: q's status is not that of a counted quota.
func needsCount(q *corev1.ResourceQuota) bool {
	if !quota.Equals(q.Spec.Hard, q.Status.Hard) || q.Status.Used == nil {
		return true
	}
	for n := range q.Spec.Hard {
		if _, ok := q.Status.Used[n]; !ok {
			return true
		}
	}
	return false
}

// updated recounts cur's namespace when the update changed its usage.
func (c *Controller) updated(e quota.Evaluator, old, cur any) {
	if c.usageChanged(e, old, cur) {
		c.replenish(cur)
	}
}

// usageChanged reports whether an update changed what the object uses:
// a pod that stopped counting (terminal), a Service of another type, a
// claim resized.
func (c *Controller) usageChanged(e quota.Evaluator, old, cur any) bool {
	o, ok1 := old.(runtime.Object)
	n, ok2 := cur.(runtime.Object)
	if !ok1 || !ok2 {
		return false
	}
	if m, ok := cur.(metav1.Object); !ok || !c.hasQuotas(m.GetNamespace()) {
		return false
	}
	if p, ok := cur.(*corev1.Pod); ok {
		op, _ := old.(*corev1.Pod)
		now := c.clock.Now()
		return op != nil && quota.PodCounts(op, now) && !quota.PodCounts(p, now)
	}
	ou, err1 := e.Usage(o, c.clock.Now())
	nu, err2 := e.Usage(n, c.clock.Now())
	return err1 == nil && err2 == nil && !quota.Equals(ou, nu)
}

// hasQuotas reports whether ns has a quota, from the informer's index.
func (c *Controller) hasQuotas(ns string) bool {
	qs, err := c.quotas.ResourceQuotas(ns).List(labels.Everything())
	return err == nil && len(qs) > 0
}

// replenish recounts, shortly, every quota of obj's namespace.
func (c *Controller) replenish(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok || m.GetNamespace() == "" {
		return
	}
	qs, err := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		c.Queue.AddAfter(q.Namespace+"/"+q.Name, replenishDelay)
	}
}

// sync recounts one quota and writes its status if it changed.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	counted, countErr := c.Usage(ctx, q)
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	for k, v := range counted {
		used[k] = v
	}
	used = quota.Mask(used, quota.Names(hard))
	if q.Status.Hard != nil && q.Status.Used != nil && quota.Equals(hard, q.Status.Hard) && quota.Equals(used, q.Status.Used) {
		return countErr
	}
	out := q.DeepCopy()
	out.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of resource quota %s: %w", key, err)
	}
	return countErr
}

// Usage counts what q's namespace uses of each of q's hard resources
// that some evaluator tracks; resources it could not count (a count/ of
// a resource not served) are left out, and the error says why.
func (c *Controller) Usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	names := quota.Names(q.Spec.Hard)
	out := corev1.ResourceList{}
	now := c.clock.Now()
	done := map[schema.GroupResource]bool{}
	for _, t := range c.typed {
		done[t.e.GroupResource()] = true
		matched := t.e.MatchingResources(names)
		if len(matched) == 0 {
			continue
		}
		objs, err := t.list(q.Namespace)
		if err != nil {
			return nil, err
		}
		sum, err := sumUsage(t.e, q, matched, objs, now)
		if err != nil {
			return nil, err
		}
		out = quota.Add(out, sum)
	}
	var errs []error
	for _, n := range names {
		gr, ok := quota.CountedResource(n)
		if !ok || done[gr] {
			continue
		}
		done[gr] = true
		objs, err := c.metadataObjects(ctx, gr, q.Namespace)
		if errors.Is(err, errNotServed) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e := quota.For(gr)
		sum, err := sumUsage(e, q, e.MatchingResources(names), objs, now)
		if err != nil {
			return nil, err
		}
		out = quota.Add(out, sum)
	}
	if len(errs) > 0 {
		// Joined, so that a requeue (an informer still syncing) is one.
		return out, fmt.Errorf("counting quota %s/%s: %w", q.Namespace, q.Name, errors.Join(errs...))
	}
	return out, nil
}

// sumUsage adds up what the objects in q's scopes use of matched, every
// matched resource present (at zero when nothing uses it).
func sumUsage(e quota.Evaluator, q *corev1.ResourceQuota, matched []corev1.ResourceName, objs []runtime.Object, now time.Time) (corev1.ResourceList, error) {
	sum := corev1.ResourceList{}
	for _, n := range matched {
		sum[n] = resource.Quantity{Format: resource.DecimalSI}
	}
	for _, obj := range objs {
		in, err := e.InScopes(q, obj)
		if err != nil {
			return nil, err
		}
		if !in {
			continue
		}
		u, err := e.Usage(obj, now)
		if err != nil {
			return nil, err
		}
		sum = quota.Add(sum, quota.Mask(u, matched))
	}
	return sum, nil
}
