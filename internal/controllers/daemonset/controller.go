package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "daemonset"

// burstReplicas caps creations or deletions per sync, as upstream.
const burstReplicas = 250

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the DaemonSet controller.
type Controller struct {
	reconcile.Base
	dsLister appslisters.DaemonSetLister
	pods     corelisters.PodLister
	podInf   cache.SharedIndexInformer
	nodes    corelisters.NodeLister
	exp      *podcontrol.Expectations
	recorder record.EventRecorder
}

// Descriptor is the daemonset entry of the manager's list (2 workers, as
// upstream's --concurrent-daemonset-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 2, New)
}

// New registers handlers on the DaemonSet, Pod and Node informers.
func New(c *controllerctx.Context) (*Controller, error) {
	dsInf := c.Informers.Apps().V1().DaemonSets()
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	dc := &Controller{
		dsLister: dsInf.Lister(),
		pods:     podInf.Lister(),
		podInf:   podInf.Informer(),
		nodes:    nodeInf.Lister(),
		exp:      podcontrol.NewExpectations(c.Clock),
		recorder: podcontrol.Recorder(c, "daemonset-controller"),
	}
	dc.Base = reconcile.NewBase(c, Name, dc.sync, reconcile.Options[string]{})
	dc.Synced = []cache.InformerSynced{dsInf.Informer().HasSynced, podInf.Informer().HasSynced, nodeInf.Informer().HasSynced}
	if err := podcontrol.AddControllerUIDIndexer(dc.podInf); err != nil {
		return nil, err
	}
	return dc, reconcile.AddHandlers(
		reconcile.Handler{Informer: dsInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    dc.Enqueue,
			UpdateFunc: func(_, cur any) { dc.Enqueue(cur) },
			DeleteFunc: func(obj any) {
				if key, ok := reconcile.Key(obj); ok {
					dc.exp.Delete(key)
				}
			},
		}},
		// Orphans are adopted on the next sync of a DaemonSet selecting
		// them; node or DaemonSet events trigger those syncs.
		reconcile.Handler{Informer: podInf.Informer(), Handler: podcontrol.OwnedEvents[*corev1.Pod]{Resolve: dc.resolveKey, Queue: dc.Queue, Exp: dc.exp}.Handler()},
		reconcile.Handler{Informer: nodeInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { dc.enqueueAll() },
			UpdateFunc: func(old, cur any) {
				o, n := old.(*corev1.Node), cur.(*corev1.Node)
				if !labels.Equals(o.Labels, n.Labels) || !taintsEqual(o.Spec.Taints, n.Spec.Taints) || o.Spec.Unschedulable != n.Spec.Unschedulable {
					dc.enqueueAll()
				}
			},
			DeleteFunc: func(any) { dc.enqueueAll() },
		}})
}

func (dc *Controller) enqueueAll() {
	all, err := dc.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		dc.Enqueue(ds)
	}
}

func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect {
			return false
		}
	}
	return true
}

// resolveKey returns the key of the DaemonSet ref names, if it is one we
// know with the same UID.
func (dc *Controller) resolveKey(namespace string, ref *metav1.OwnerReference) string {
	return podcontrol.ResolveKey(ref, controllerKind.Kind, dc.dsLister.DaemonSets(namespace).Get)
}
