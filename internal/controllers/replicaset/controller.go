package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "replicaset"

// BurstReplicas caps the creations or deletions of one sync (upstream's
// BurstReplicas), so one huge ReplicaSet does not starve the others.
const BurstReplicas = 500

// Controller is the ReplicaSet controller, or the ReplicationController
// controller: the same sync over another kind.
type Controller struct {
	reconcile.Base
	kind   kind
	pods   corelisters.PodLister
	podInf cache.SharedIndexInformer
	exp    *podcontrol.Expectations
	// podEvents turns pod events into owner keys.
	podEvents podcontrol.OwnedEvents[*corev1.Pod]
	recorder  record.EventRecorder
	burst     int
}

// New registers the ReplicaSet controller's handlers on the ReplicaSet and
// Pod informers.
func New(c *controllerctx.Context) (*Controller, error) { return newController(c, replicaSetKind(c)) }

func newController(c *controllerctx.Context, k kind) (*Controller, error) {
	podInf := c.Informers.Core().V1().Pods()
	rc := &Controller{
		kind:     k,
		pods:     podInf.Lister(),
		podInf:   podInf.Informer(),
		exp:      podcontrol.NewExpectations(c.Clock),
		recorder: podcontrol.Recorder(c, k.component),
		burst:    BurstReplicas,
	}
	rc.Base = reconcile.NewBase(c, k.name, rc.sync, reconcile.Options[string]{})
	rc.Synced = []cache.InformerSynced{k.informer.HasSynced, podInf.Informer().HasSynced}
	if err := podcontrol.AddControllerUIDIndexer(rc.podInf); err != nil {
		return nil, err
	}
	rc.podEvents = podcontrol.OwnedEvents[*corev1.Pod]{Resolve: rc.resolveKey, Queue: rc.Queue, Exp: rc.exp, Orphan: rc.adopters, Updated: rc.podUpdated}
	return rc, reconcile.AddHandlers(
		reconcile.Handler{Informer: k.informer, Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    rc.Enqueue,
			UpdateFunc: func(_, cur any) { rc.Enqueue(cur) },
			DeleteFunc: rc.deleteOwner,
		}},
		reconcile.Handler{Informer: podInf.Informer(), Handler: rc.podEvents.Handler()})
}

func (rc *Controller) deleteOwner(obj any) {
	key, ok := reconcile.Key(obj)
	if !ok {
		return
	}
	rc.exp.Delete(key)
	rc.Queue.Add(key)
}

// resolveKey returns the key of the owner ref names, if it is one we know
// with the same UID.
func (rc *Controller) resolveKey(namespace string, ref *metav1.OwnerReference) string {
	return podcontrol.ResolveKey(ref, rc.kind.gvk.Kind, func(name string) (*appsv1.ReplicaSet, error) { return rc.kind.get(namespace, name) })
}

// adopters queues the owners whose selector matches the orphan pod, which
// may want to adopt it.
func (rc *Controller) adopters(pod *corev1.Pod) {
	all, err := rc.kind.list(pod.Namespace)
	if err != nil {
		return
	}
	for _, rs := range podcontrol.Selecting(all, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, pod.Labels) {
		rc.Enqueue(rs)
	}
}

// podUpdated schedules a look at key when its pod just became ready: it
// becomes available minReadySeconds later, and nothing else would wake us.
func (rc *Controller) podUpdated(key string, old, cur *corev1.Pod) {
	if podcontrol.IsPodReady(old) || !podcontrol.IsPodReady(cur) {
		return
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if rs, err := rc.kind.get(ns, name); err == nil && rs.Spec.MinReadySeconds > 0 {
		rc.Queue.AddAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
	}
}

// Descriptor is the replicaset entry of the manager's list (5 workers, as
// upstream's --concurrent-replicaset-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}
