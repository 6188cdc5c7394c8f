package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// kind is how the shared sync reads and writes the objects it keeps
// replicas for. The sync works on ReplicaSets; a ReplicaSet is read as
// itself, a ReplicationController is converted to one in memory and its
// status written back (replicationcontroller.go), which is how upstream's
// replication manager reuses its ReplicaSet controller too.
type kind struct {
	// gvk of the controlled objects: the pods' controller references name it.
	gvk schema.GroupVersionKind
	// name is the controller's name (queue, metrics, logs); component is
	// the source of its events.
	name, component string
	// informer delivers the controlled objects.
	informer cache.SharedIndexInformer
	// get and list read the informer's cache. The ReplicaSets they return
	// may share memory with the cache: read them, never write them.
	get  func(namespace, name string) (*appsv1.ReplicaSet, error)
	list func(namespace string) ([]*appsv1.ReplicaSet, error)
	// getLive reads the object from the API server.
	getLive func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// updateStatus writes rs's status (observedGeneration included) and
	// returns the object as stored.
	updateStatus func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// eventObject is the object events about rs are recorded on, so they
	// name the user's object and not its in-memory conversion.
	eventObject func(rs *appsv1.ReplicaSet) object
}

// object is an API object: what events are recorded on.
type object interface {
	metav1.Object
	runtime.Object
}

// replicaSetKind is the kind of the ReplicaSet controller.
func replicaSetKind(c *controllerctx.Context) kind {
	inf := c.Informers.Apps().V1().ReplicaSets()
	lister := inf.Lister()
	client := c.Client
	return kind{
		gvk:       appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		name:      Name,
		component: "replicaset-controller",
		informer:  inf.Informer(),
		get:       func(ns, name string) (*appsv1.ReplicaSet, error) { return lister.ReplicaSets(ns).Get(name) },
		list: func(ns string) ([]*appsv1.ReplicaSet, error) {
			return lister.ReplicaSets(ns).List(labels.Everything())
		},
		getLive: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			return client.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		updateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		},
		eventObject: func(rs *appsv1.ReplicaSet) object { return rs },
	}
}
