package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

var (
	notReadyNoExecute    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	unreachableNoExecute = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
)

// wantedTaints says which condition taints a node should carry:
// NoSchedule ones apply at once, the NoExecute one (nil for none) at the
// zone's rate.
func wantedTaints(n *corev1.Node) (noSchedule []corev1.Taint, noExecute *corev1.Taint) {
	if n.Spec.Unschedulable {
		noSchedule = append(noSchedule, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	_, ready := readyCondition(n)
	if ready == nil {
		return noSchedule, nil
	}
	switch ready.Status {
	case corev1.ConditionFalse:
		noSchedule = append(noSchedule, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		return noSchedule, &notReadyNoExecute
	case corev1.ConditionUnknown:
		noSchedule = append(noSchedule, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule})
		return noSchedule, &unreachableNoExecute
	}
	return noSchedule, nil
}

var managedNoSchedule = []string{corev1.TaintNodeUnschedulable, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

// reconcileTaints applies NoSchedule taints and NoExecute removals at
// once, swaps one NoExecute condition taint for the other at once, and
// queues a new NoExecute taint in the node's zone.
func (c *Controller) reconcileTaints(ctx context.Context, n *corev1.Node, now time.Time) error {
	noSchedule, noExecute := wantedTaints(n)
	c.mu.Lock()
	full := c.mu.fullDisruption
	z := c.mu.zones[zoneOf(n)]
	c.mu.Unlock()
	if full {
		noExecute = nil
	}
	hasNoExec := hasTaint(n.Spec.Taints, notReadyNoExecute) || hasTaint(n.Spec.Taints, unreachableNoExecute)
	queue := noExecute != nil && !hasTaint(n.Spec.Taints, *noExecute) && !hasNoExec
	c.mu.Lock()
	if z != nil {
		if queue {
			if _, ok := z.pending[n.Name]; !ok {
				z.pending[n.Name] = now
			}
		} else {
			delete(z.pending, n.Name)
		}
	}
	c.mu.Unlock()
	want := func(taints []corev1.Taint) []corev1.Taint {
		out := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool {
			if t.Effect == corev1.TaintEffectNoSchedule && slices.Contains(managedNoSchedule, t.Key) {
				return !hasTaint(noSchedule, t)
			}
			if t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) {
				// Keep only the wanted one; an unwanted one is swapped below.
				return noExecute == nil || t.Key != noExecute.Key
			}
			return false
		})
		for _, t := range noSchedule {
			if !hasTaint(out, t) {
				out = append(out, t)
			}
		}
		// A node already tainted for the other condition is swapped at
		// once: its pods' eviction was already rate-limited.
		if noExecute != nil && hasNoExec && !hasTaint(out, *noExecute) {
			t := *noExecute
			t.TimeAdded = ptr(metav1.NewTime(now))
			out = append(out, t)
		}
		return out
	}
	return c.updateTaints(ctx, n, want)
}

// taintPass applies queued NoExecute taints, oldest first, as each zone's
// rate allows.
func (c *Controller) taintPass(ctx context.Context) {
	now := c.clock.Now()
	var due []string
	c.mu.Lock()
	for _, z := range c.mu.zones {
		if z.rate <= 0 || len(z.pending) == 0 || now.Before(z.nextAt) {
			continue
		}
		names := make([]string, 0, len(z.pending))
		for name := range z.pending {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool {
			ti, tj := z.pending[names[i]], z.pending[names[j]]
			return ti.Before(tj) || (ti.Equal(tj) && names[i] < names[j])
		})
		due = append(due, names[0])
		delete(z.pending, names[0])
		z.nextAt = now.Add(time.Duration(float64(time.Second) / z.rate))
	}
	c.mu.Unlock()
	for _, name := range due {
		n, err := c.nodes.Get(name)
		if err != nil {
			continue
		}
		_, noExecute := wantedTaints(n)
		if noExecute == nil {
			continue
		}
		err = c.updateTaints(ctx, n, func(taints []corev1.Taint) []corev1.Taint {
			if hasTaint(taints, *noExecute) {
				return taints
			}
			t := *noExecute
			t.TimeAdded = ptr(metav1.NewTime(now))
			return append(slices.Clone(taints), t)
		})
		if err != nil {
			c.log.Info("tainting node", "node", name, "err", err)
			continue
		}
		c.log.Info("tainted node NoExecute", "node", name, "taint", noExecute.Key)
	}
}

// updateTaints writes mutate(taints) when it differs, re-reading the node
// from the API on a conflict.
func (c *Controller) updateTaints(ctx context.Context, n *corev1.Node, mutate func([]corev1.Taint) []corev1.Taint) error {
	for attempt := 0; ; attempt++ {
		next := mutate(n.Spec.Taints)
		if sameTaints(next, n.Spec.Taints) {
			return nil
		}
		cp := n.DeepCopy()
		cp.Spec.Taints = next
		_, err := c.client.CoreV1().Nodes().Update(ctx, cp, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return fmt.Errorf("updating node %s taints: %w", n.Name, err)
		}
		if n, err = c.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("getting node %s: %w", n.Name, err)
		}
	}
}

func sameTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for _, t := range a {
		if !hasTaint(b, t) {
			return false
		}
	}
	return true
}

// evictPass deletes the pods on NoExecute-tainted nodes that do not
// tolerate every such taint, or whose toleration time since the taint was
// added has run out.
func (c *Controller) evictPass(ctx context.Context) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	for _, n := range nodes {
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoExecute {
				taints = append(taints, t)
			}
		}
		c.dateTaints(n.Name, taints, now)
		if len(taints) == 0 {
			continue
		}
		objs, _ := c.pods.ByIndex(podNodeIndex, n.Name)
		for _, o := range objs {
			p := o.(*corev1.Pod)
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			due, ok := evictionTime(p, taints)
			if !ok || now.Before(due) {
				continue
			}
			if err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				c.log.Info("evicting pod", "pod", p.Namespace+"/"+p.Name, "err", err)
				continue
			}
			c.log.Info("evicted pod from tainted node", "pod", p.Namespace+"/"+p.Name, "node", n.Name)
			if c.recorder != nil {
				c.recorder.Eventf(p, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", p.Namespace, p.Name)
			}
		}
	}
}

// dateTaints dates every NoExecute taint by when this controller first saw
// it, or its timeAdded if that is later (a taint removed and added again
// between two passes), as upstream's taint manager counts tolerationSeconds
// from when it sees a taint. timeAdded alone will not do: it is stored
// with whole seconds, so counting from it evicts up to a second before the
// toleration has run out; and a taint added without one (by a user) would
// count from the epoch.
func (c *Controller) dateTaints(node string, taints []corev1.Taint, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	current := map[string]bool{}
	for i := range taints {
		k := node + "\x00" + taints[i].Key + "\x00" + taints[i].Value
		current[k] = true
		first, ok := c.mu.taintSeen[k]
		if !ok {
			first = now
			c.mu.taintSeen[k] = now
		}
		if added := taints[i].TimeAdded; added != nil && added.After(first) {
			first = added.Time
		}
		taints[i].TimeAdded = ptr(metav1.NewTime(first))
	}
	// A taint removed and added again is dated afresh.
	for k := range c.mu.taintSeen {
		if strings.HasPrefix(k, node+"\x00") && !current[k] {
			delete(c.mu.taintSeen, k)
		}
	}
}

// evictionTime is when the pod must go because of the NoExecute taints:
// at once if one is not tolerated, never if all are tolerated forever,
// else the latest taint time plus the shortest toleration seconds.
func evictionTime(p *corev1.Pod, taints []corev1.Taint) (time.Time, bool) {
	var start time.Time
	minSeconds := int64(-1)
	for i := range taints {
		t := &taints[i]
		tolerated := false
		for j := range p.Spec.Tolerations {
			tol := &p.Spec.Tolerations[j]
			if !tol.ToleratesTaint(klog.Logger{}, t, false) {
				continue
			}
			tolerated = true
			if tol.TolerationSeconds != nil && (minSeconds < 0 || *tol.TolerationSeconds < minSeconds) {
				minSeconds = max(*tol.TolerationSeconds, 0)
			}
		}
		if !tolerated {
			return time.Time{}, true
		}
		if t.TimeAdded != nil && t.TimeAdded.After(start) {
			start = t.TimeAdded.Time
		}
	}
	if minSeconds < 0 {
		return time.Time{}, false
	}
	return start.Add(time.Duration(minSeconds) * time.Second), true
}

func ptr[T any](v T) *T { return &v }
