package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// RCName is the ReplicationController controller's name, as
// kube-controller-manager's.
const RCName = "replicationcontroller"

// NewReplicationManager registers the ReplicationController controller's
// handlers on the ReplicationController and Pod informers. It is the
// ReplicaSet controller's sync over ReplicationControllers converted to
// ReplicaSets: pods it creates or adopts name the ReplicationController as
// their controller, and status is written to the ReplicationController.
func NewReplicationManager(c *controllerctx.Context) (*Controller, error) {
	return newController(c, replicationControllerKind(c))
}

// RCDescriptor is the replicationcontroller entry of the manager's list (5
// workers, as upstream's --concurrent-rc-syncs).
func RCDescriptor() controllerctx.Descriptor {
	return controllerctx.Describe(RCName, 5, NewReplicationManager)
}

func replicationControllerKind(c *controllerctx.Context) kind {
	inf := c.Informers.Core().V1().ReplicationControllers()
	lister := inf.Lister()
	client := c.Client
	return kind{
		gvk:       corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		name:      RCName,
		component: "replication-controller",
		informer:  inf.Informer(),
		get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := lister.ReplicationControllers(ns).Get(name)
			if err != nil {
				return nil, err
			}
			return replicaSetFromRC(rc), nil
		},
		list: func(ns string) ([]*appsv1.ReplicaSet, error) {
			rcs, err := lister.ReplicationControllers(ns).List(labels.Everything())
			if err != nil {
				return nil, err
			}
			out := make([]*appsv1.ReplicaSet, len(rcs))
			for i, rc := range rcs {
				out[i] = replicaSetFromRC(rc)
			}
			return out, nil
		},
		getLive: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := client.CoreV1().ReplicationControllers(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return replicaSetFromRC(rc), nil
		},
		updateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			rc, err := client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, rcFromReplicaSet(rs), metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			return replicaSetFromRC(rc), nil
		},
		eventObject: func(rs *appsv1.ReplicaSet) object {
			rc := rcFromReplicaSet(rs)
			rc.TypeMeta = metav1.TypeMeta{Kind: "ReplicationController", APIVersion: "v1"}
			return rc
		},
	}
}

// replicaSetFromRC is rc as the ReplicaSet the sync works on: same
// metadata, its map selector as matchLabels. It shares rc's maps and
// template, as a cache read must be treated as read-only anyway; the sync
// deep-copies before it writes.
func replicaSetFromRC(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	// An empty selector would select every pod; validation forbids one,
	// and a nil selector selects nothing, which is the safe reading.
	if len(rc.Spec.Selector) > 0 {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// rcFromReplicaSet is the inverse of replicaSetFromRC for what a
// ReplicationController can hold (a selector of matchLabels only; the sync
// never changes the spec).
func rcFromReplicaSet(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	if !apiequality.Semantic.DeepEqual(rs.Spec.Template, corev1.PodTemplateSpec{}) {
		t := rs.Spec.Template
		rc.Spec.Template = &t
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}
