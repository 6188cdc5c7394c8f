package podcontrol

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// ControllerUIDIndex indexes objects by their controller's UID, and
// orphans by "orphan/<namespace>", as upstream's PodControllerUIDIndex: a
// controller syncing one object reads its own pods (or ReplicaSets) and the
// orphans it may adopt instead of every one in the namespace. At 6,667
// Deployments in one namespace, listing every ReplicaSet on each
// Deployment sync was a quarter of the server's CPU.
const ControllerUIDIndex = "myriad.controllerUID"

func orphanKey(namespace string) string { return "orphan/" + namespace }

// AddControllerUIDIndexer adds the index to a pod or ReplicaSet informer
// once; every workload controller calls it from New.
func AddControllerUIDIndexer(inf cache.SharedIndexInformer) error {
	return reconcile.AddIndexers(inf, cache.Indexers{ControllerUIDIndex: func(obj any) ([]string, error) {
		o, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return []string{orphanKey(o.GetNamespace())}, nil
	}})
}

// PodsForOwner returns the pods controlled by uid plus the orphans of
// namespace: everything a claim by that owner can keep or adopt.
func PodsForOwner(inf cache.SharedIndexInformer, namespace string, uid types.UID) ([]*corev1.Pod, error) {
	return ForOwner[*corev1.Pod](inf, namespace, uid)
}

// ForOwner is PodsForOwner for an informer of T (AddControllerUIDIndexer
// added).
func ForOwner[T metav1.Object](inf cache.SharedIndexInformer, namespace string, uid types.UID) ([]T, error) {
	var out []T
	for _, key := range []string{string(uid), orphanKey(namespace)} {
		objs, err := inf.GetIndexer().ByIndex(ControllerUIDIndex, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if t, ok := o.(T); ok && t.GetNamespace() == namespace {
				out = append(out, t)
			}
		}
	}
	return out, nil
}
