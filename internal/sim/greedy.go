package sim

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// greedyTask is the Civis "greedy DaemonSet" agent on this node: a
// cluster-wide, consistent LIST of Services every GreedyListInterval.
func (n *node) greedyTask(due time.Time) {
	ctx := n.runCtx()
	if ctx.Err() != nil {
		return
	}
	if !n.isFailed() {
		lctx, cancel := context.WithTimeout(ctx, max(n.s.cfg.GreedyListInterval, 10*time.Second))
		_, err := n.s.client.CoreV1().Services("").List(lctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			n.s.counters.greedyLists.Add(1)
		} else if ctx.Err() == nil {
			n.s.counters.greedyErrors.Add(1)
			n.s.cfg.Logger.Debug("greedy list failed", "node", n.name, "err", err)
		}
		n.s.metrics.greedyList(err == nil)
	}
	n.s.greedy.at(n.next(due, n.s.cfg.GreedyListInterval), n.greedyTask)
}
