package nodelifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// monitor is one health pass over every node: stale heartbeats become
// Ready=Unknown, zone states are recomputed, and taints are reconciled.
// Nodes whose heartbeat is fresh are not written.
func (c *Controller) monitor(ctx context.Context) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		c.log.Error("listing nodes", "err", err)
		return
	}
	now := c.clock.Now()
	seen := make(map[string]bool, len(nodes))
	byZone := map[string][]*corev1.Node{}
	for _, n := range nodes {
		seen[n.Name] = true
		lease, _ := c.leases.Leases(LeaseNamespace).Get(n.Name)
		probe := c.observe(n, lease, now)
		_, ready := readyCondition(n)
		grace := c.opts.GracePeriod
		if ready == nil {
			grace = c.opts.StartupGracePeriod
		}
		if now.Sub(probe) > grace && (ready == nil || ready.Status != corev1.ConditionUnknown) {
			if updated, err := c.markUnknown(ctx, n, now); err != nil {
				c.log.Info("marking node unknown", "node", n.Name, "err", err)
			} else {
				n = updated
			}
		}
		if _, ready := readyCondition(n); ready != nil && ready.Status != corev1.ConditionTrue {
			c.markPodsNotReady(ctx, n)
		}
		byZone[zoneOf(n)] = append(byZone[zoneOf(n)], n)
	}
	c.forget(seen)
	c.handleDisruption(byZone, now)
	for _, ns := range byZone {
		for _, n := range ns {
			if err := c.reconcileTaints(ctx, n, now); err != nil {
				c.log.Info("reconciling taints", "node", n.Name, "err", err)
			}
		}
	}
}

// markUnknown sets every node condition Unknown, as upstream does when the
// kubelet stops posting status.
func (c *Controller) markUnknown(ctx context.Context, n *corev1.Node, now time.Time) (*corev1.Node, error) {
	next := n.DeepCopy()
	t := metav1.NewTime(now)
	for _, typ := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		found := false
		for i := range next.Status.Conditions {
			cond := &next.Status.Conditions[i]
			if cond.Type != typ {
				continue
			}
			found = true
			if cond.Status != corev1.ConditionUnknown {
				cond.Status = corev1.ConditionUnknown
				cond.Reason = "NodeStatusUnknown"
				cond.Message = "Kubelet stopped posting node status."
				cond.LastTransitionTime = t
			}
		}
		if !found {
			next.Status.Conditions = append(next.Status.Conditions, corev1.NodeCondition{
				Type: typ, Status: corev1.ConditionUnknown, Reason: "NodeStatusNeverUpdated",
				Message: "Kubelet never posted node status.", LastHeartbeatTime: n.CreationTimestamp, LastTransitionTime: t,
			})
		}
	}
	out, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating node %s status: %w", n.Name, err)
	}
	c.log.Info("node stopped heartbeating; marked Ready=Unknown", "node", n.Name)
	if c.recorder != nil {
		c.recorder.Eventf(&corev1.ObjectReference{Kind: "Node", Name: n.Name, UID: n.UID}, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", n.Name)
	}
	return out, nil
}

// markPodsNotReady sets Ready=False on the pods of a node that is not
// Ready, so endpoints stop sending them traffic before they are evicted.
func (c *Controller) markPodsNotReady(ctx context.Context, n *corev1.Node) {
	objs, _ := c.pods.ByIndex(podNodeIndex, n.Name)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		for i, cond := range p.Status.Conditions {
			if cond.Type != corev1.PodReady || cond.Status == corev1.ConditionFalse {
				continue
			}
			next := p.DeepCopy()
			next.Status.Conditions[i].Status = corev1.ConditionFalse
			next.Status.Conditions[i].LastTransitionTime = metav1.NewTime(c.clock.Now())
			if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				c.log.Info("marking pod not ready", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
		}
	}
}

// zoneOf is upstream's zone key: region and zone labels.
func zoneOf(n *corev1.Node) string {
	region := n.Labels[corev1.LabelTopologyRegion]
	zone := n.Labels[corev1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}
