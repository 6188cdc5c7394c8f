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
		reconcile.Handler{Informer: podInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    dc.addPod,
			UpdateFunc: dc.updatePod,
			DeleteFunc: dc.deletePod,
		}},
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

func (dc *Controller) resolve(pod *corev1.Pod) (*appsv1.DaemonSet, string) {
	ds, ok := podcontrol.ResolveRef(metav1.GetControllerOfNoCopy(pod), controllerKind.Kind, dc.dsLister.DaemonSets(pod.Namespace).Get)
	if !ok {
		return nil, ""
	}
	key, _ := reconcile.Key(ds)
	return ds, key
}

func (dc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		dc.deletePod(pod)
		return
	}
	if ds, key := dc.resolve(pod); ds != nil {
		dc.exp.CreationObserved(key)
		dc.Queue.Add(key)
	}
	// Orphans are adopted on the next sync of a DaemonSet selecting them;
	// node or DaemonSet events trigger those syncs.
}

func (dc *Controller) updatePod(old, cur any) {
	o, n := old.(*corev1.Pod), cur.(*corev1.Pod)
	if o.ResourceVersion == n.ResourceVersion {
		return
	}
	if n.DeletionTimestamp != nil {
		dc.deletePod(n)
		return
	}
	if ds, key := dc.resolve(n); ds != nil {
		dc.Queue.Add(key)
	}
	if ds, key := dc.resolve(o); ds != nil {
		dc.Queue.Add(key)
	}
}

func (dc *Controller) deletePod(obj any) {
	pod, ok := reconcile.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ds, key := dc.resolve(pod); ds != nil {
		podKey, _ := reconcile.Key(pod)
		dc.exp.DeletionObserved(key, podKey)
		dc.Queue.Add(key)
	}
}
