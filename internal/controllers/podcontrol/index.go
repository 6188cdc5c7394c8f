package podcontrol

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// ControllerUIDIndex indexes pods by their controller's UID, and orphans
// by "orphan/<namespace>", as upstream's PodControllerUIDIndex: a
// controller syncing one object reads its own pods and the orphans it may
// adopt instead of every pod in the namespace.
const ControllerUIDIndex = "myriad.controllerUID"

func orphanKey(namespace string) string { return "orphan/" + namespace }

// AddControllerUIDIndexer adds the index to the pod informer once; every
// workload controller calls it from New.
func AddControllerUIDIndexer(inf cache.SharedIndexInformer) error {
	return reconcile.AddIndexers(inf, cache.Indexers{ControllerUIDIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return []string{orphanKey(pod.Namespace)}, nil
	}})
}

// PodsForOwner returns the pods controlled by uid plus the orphans of
// namespace: everything a claim by that owner can keep or adopt.
func PodsForOwner(inf cache.SharedIndexInformer, namespace string, uid types.UID) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, key := range []string{string(uid), orphanKey(namespace)} {
		objs, err := inf.GetIndexer().ByIndex(ControllerUIDIndex, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && p.Namespace == namespace {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
