package deployment

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
const Name = "deployment"

var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Controller is the Deployment controller.
type Controller struct {
	reconcile.Base
	dLister  appslisters.DeploymentLister
	rsLister appslisters.ReplicaSetLister
	// rsInf has podcontrol's ControllerUIDIndex: a sync claims from its
	// own ReplicaSets and the namespace's orphans.
	rsInf    cache.SharedIndexInformer
	pods     corelisters.PodLister
	recorder record.EventRecorder
}

// Descriptor is the deployment entry of the manager's list (5 workers, as
// upstream's --concurrent-deployment-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// New registers the controller's handlers on the Deployment, ReplicaSet
// and Pod informers.
func New(c *controllerctx.Context) (*Controller, error) {
	dInf := c.Informers.Apps().V1().Deployments()
	rsInf := c.Informers.Apps().V1().ReplicaSets()
	podInf := c.Informers.Core().V1().Pods()
	dc := &Controller{
		dLister:  dInf.Lister(),
		rsLister: rsInf.Lister(),
		rsInf:    rsInf.Informer(),
		pods:     podInf.Lister(),
		recorder: podcontrol.Recorder(c, "deployment-controller"),
	}
	dc.Base = reconcile.NewBase(c, Name, dc.sync, reconcile.Options[string]{})
	dc.Synced = []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced}
	if err := podcontrol.AddControllerUIDIndexer(dc.rsInf); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(dInf.Informer(), reconcile.All, dc.Enqueue); err != nil {
		return nil, err
	}
	// Recreate waits for old pods to be gone; their deletion wakes it.
	if err := reconcile.Watch(podInf.Informer(), reconcile.Deletes, dc.deletePod); err != nil {
		return nil, err
	}
	rsEvents := podcontrol.OwnedEvents[*appsv1.ReplicaSet]{Resolve: dc.resolveKey, Queue: dc.Queue, Orphan: dc.adopters}
	return dc, reconcile.AddHandlers(reconcile.Handler{Informer: rsInf.Informer(), Handler: rsEvents.Handler()})
}

func (dc *Controller) resolveRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	d, _ := podcontrol.ResolveRef(ref, controllerKind.Kind, dc.dLister.Deployments(namespace).Get)
	return d
}

// resolveKey is resolveRef's key, "" for none.
func (dc *Controller) resolveKey(namespace string, ref *metav1.OwnerReference) string {
	return podcontrol.ResolveKey(ref, controllerKind.Kind, dc.dLister.Deployments(namespace).Get)
}

// adopters queues the deployments whose selector matches the orphan rs.
func (dc *Controller) adopters(rs *appsv1.ReplicaSet) {
	all, err := dc.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range podcontrol.Selecting(all, func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }, rs.Labels) {
		dc.Enqueue(d)
	}
}

func (dc *Controller) deletePod(obj any) {
	pod, ok := reconcile.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := dc.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	dref := metav1.GetControllerOfNoCopy(rs)
	if dref == nil {
		return
	}
	if d := dc.resolveRef(rs.Namespace, dref); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		dc.Enqueue(d)
	}
}
