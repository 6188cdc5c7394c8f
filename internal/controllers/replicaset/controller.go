package replicaset

import (
	"time"

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
const Name = "replicaset"

// BurstReplicas caps the creations or deletions of one sync (upstream's
// BurstReplicas), so one huge ReplicaSet does not starve the others.
const BurstReplicas = 500

var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet controller.
type Controller struct {
	reconcile.Base
	rsLister appslisters.ReplicaSetLister
	pods     corelisters.PodLister
	podInf   cache.SharedIndexInformer
	exp      *podcontrol.Expectations
	recorder record.EventRecorder
	burst    int
}

// New registers the controller's handlers on the ReplicaSet and Pod informers.
func New(c *controllerctx.Context) (*Controller, error) {
	rsInf := c.Informers.Apps().V1().ReplicaSets()
	podInf := c.Informers.Core().V1().Pods()
	rc := &Controller{
		rsLister: rsInf.Lister(),
		pods:     podInf.Lister(),
		podInf:   podInf.Informer(),
		exp:      podcontrol.NewExpectations(c.Clock),
		recorder: podcontrol.Recorder(c, "replicaset-controller"),
		burst:    BurstReplicas,
	}
	rc.Base = reconcile.NewBase(c, Name, rc.sync, reconcile.Options[string]{})
	rc.Synced = []cache.InformerSynced{rsInf.Informer().HasSynced, podInf.Informer().HasSynced}
	if err := podcontrol.AddControllerUIDIndexer(rc.podInf); err != nil {
		return nil, err
	}
	return rc, reconcile.AddHandlers(
		reconcile.Handler{Informer: rsInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    rc.Enqueue,
			UpdateFunc: func(_, cur any) { rc.Enqueue(cur) },
			DeleteFunc: rc.deleteRS,
		}},
		reconcile.Handler{Informer: podInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    rc.addPod,
			UpdateFunc: rc.updatePod,
			DeleteFunc: rc.deletePod,
		}})
}

func (rc *Controller) deleteRS(obj any) {
	key, ok := reconcile.Key(obj)
	if !ok {
		return
	}
	rc.exp.Delete(key)
	rc.Queue.Add(key)
}

// resolveRef returns the ReplicaSet ref names, if it is one we know with
// the same UID.
func (rc *Controller) resolveRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	rs, _ := podcontrol.ResolveRef(ref, controllerKind.Kind, rc.rsLister.ReplicaSets(namespace).Get)
	return rs
}

// selectingReplicaSets returns the ReplicaSets whose selector matches pod,
// which may want to adopt it.
func (rc *Controller) selectingReplicaSets(pod *corev1.Pod) []*appsv1.ReplicaSet {
	all, err := rc.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	return podcontrol.Selecting(all, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, pod.Labels)
}

func (rc *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Restarted controller seeing a pod already being deleted.
		rc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		rs := rc.resolveRef(pod.Namespace, ref)
		if rs == nil {
			return
		}
		key, _ := reconcile.Key(rs)
		rc.exp.CreationObserved(key)
		rc.Queue.Add(key)
		return
	}
	for _, rs := range rc.selectingReplicaSets(pod) {
		rc.Enqueue(rs)
	}
}

func (rc *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		return // periodic resync
	}
	labelsChanged := !labels.Equals(oldPod.Labels, curPod.Labels)
	if curPod.DeletionTimestamp != nil {
		// Counts as deleted now: a graceful deletion can take long and
		// the replacement should not wait for it.
		rc.deletePod(curPod)
		if labelsChanged {
			rc.deletePod(oldPod)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(curPod), metav1.GetControllerOfNoCopy(oldPod)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if rs := rc.resolveRef(oldPod.Namespace, oldRef); rs != nil {
			rc.Enqueue(rs)
		}
	}
	if curRef != nil {
		rs := rc.resolveRef(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		rc.Enqueue(rs)
		// A pod that just became ready becomes available minReadySeconds
		// later; nothing else would wake us then.
		if !podcontrol.IsPodReady(oldPod) && podcontrol.IsPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			key, _ := reconcile.Key(rs)
			rc.Queue.AddAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || oldRef != nil {
		for _, rs := range rc.selectingReplicaSets(curPod) {
			rc.Enqueue(rs)
		}
	}
}

func (rc *Controller) deletePod(obj any) {
	pod, ok := reconcile.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	rs := rc.resolveRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, _ := reconcile.Key(rs)
	podKey, _ := reconcile.Key(pod)
	rc.exp.DeletionObserved(key, podKey)
	rc.Queue.Add(key)
}

// Descriptor is the replicaset entry of the manager's list (5 workers, as
// upstream's --concurrent-replicaset-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}
