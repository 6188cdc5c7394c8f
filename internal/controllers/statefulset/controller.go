package statefulset

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "statefulset"

var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Controller is the StatefulSet controller.
type Controller struct {
	reconcile.Base
	setLister appslisters.StatefulSetLister
	pods      corelisters.PodLister
	podInf    cache.SharedIndexInformer
	pvcs      corelisters.PersistentVolumeClaimLister
	recorder  record.EventRecorder
}

// Descriptor is the statefulset entry of the manager's list (5 workers, as
// upstream's --concurrent-statefulset-syncs).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// New registers handlers on the StatefulSet, Pod and PVC informers.
func New(c *controllerctx.Context) (*Controller, error) {
	setInf := c.Informers.Apps().V1().StatefulSets()
	podInf := c.Informers.Core().V1().Pods()
	pvcInf := c.Informers.Core().V1().PersistentVolumeClaims()
	sc := &Controller{
		setLister: setInf.Lister(),
		pods:      podInf.Lister(),
		podInf:    podInf.Informer(),
		pvcs:      pvcInf.Lister(),
		recorder:  podcontrol.Recorder(c, "statefulset-controller"),
	}
	sc.Base = reconcile.NewBase(c, Name, sc.sync, reconcile.Options[string]{})
	sc.Synced = []cache.InformerSynced{setInf.Informer().HasSynced, podInf.Informer().HasSynced, pvcInf.Informer().HasSynced}
	if err := podcontrol.AddControllerUIDIndexer(sc.podInf); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(setInf.Informer(), reconcile.Adds|reconcile.Updates, sc.Enqueue); err != nil {
		return nil, err
	}
	podChanged := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == controllerKind.Kind {
			sc.Queue.Add(p.Namespace + "/" + ref.Name)
			return
		}
		// An orphan named like a set's pod may be adopted by it.
		if i := strings.LastIndexByte(p.Name, '-'); i > 0 {
			if _, err := strconv.Atoi(p.Name[i+1:]); err == nil {
				if set, err := sc.setLister.StatefulSets(p.Namespace).Get(p.Name[:i]); err == nil {
					sc.Enqueue(set)
				}
			}
		}
	}
	return sc, reconcile.Watch(podInf.Informer(), reconcile.All, podChanged)
}
