package sim

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseNamespace is where nodes keep their heartbeat Leases.
const LeaseNamespace = corev1.NamespaceNodeLease

// leaseSpec sets what the kubelet sets on its Lease: holder, duration,
// renew time, and an owner reference to its Node (so the Lease goes when
// the Node does).
func (n *node) leaseSpec(l *coordv1.Lease, node *corev1.Node, now time.Time) {
	holder := n.name
	secs := int32(n.s.cfg.LeaseDuration / time.Second)
	renew := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &renew
	if node != nil && node.UID != "" {
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
		}}
	}
}

// ensureLease creates the node's Lease, or takes over the existing one.
func (n *node) ensureLease(ctx context.Context) error {
	leases := n.s.client.CoordinationV1().Leases(LeaseNamespace)
	n.mu.Lock()
	nodeObj := n.mu.obj
	n.mu.Unlock()
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: LeaseNamespace}}
	n.leaseSpec(l, nodeObj, n.s.cfg.Clock.Now())
	got, err := leases.Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if got, err = leases.Get(ctx, n.name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("getting existing lease: %w", err)
		}
		n.leaseSpec(got, nodeObj, n.s.cfg.Clock.Now())
		if got, err = leases.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("taking over existing lease: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("creating lease: %w", err)
	}
	got.ManagedFields = nil // unused here; see doc.go, Memory
	n.mu.Lock()
	n.mu.lease = got
	n.mu.Unlock()
	return nil
}

// renewTask renews the Lease on the node's grid, every RenewInterval.
func (n *node) renewTask(due time.Time) {
	ctx := n.runCtx()
	if ctx.Err() != nil {
		return
	}
	next := n.next(due, n.s.cfg.RenewInterval)
	if !n.renew(ctx, due) {
		n.retryHeartbeat(due, next, 0, n.renew)
	}
	n.s.heartbeats.at(next, n.renewTask)
}

// Retries of a failed renewal back off like the kubelet's lease controller:
// from 200 ms, doubling, to at most 7 s.
const (
	retryFirst = 200 * time.Millisecond
	retryMax   = 7 * time.Second
)

// retryHeartbeat retries a failed heartbeat (beat) that was due at due
// with backoff, until one succeeds or the next regular one (at next) takes
// over. Lateness is still measured from due: a retried heartbeat is late.
func (n *node) retryHeartbeat(due, next time.Time, attempt int, beat func(context.Context, time.Time) bool) {
	backoff := min(retryFirst<<attempt, retryMax)
	at := n.s.cfg.Clock.Now().Add(backoff)
	if !at.Before(next) {
		return
	}
	n.s.heartbeats.at(at, func(time.Time) {
		ctx := n.runCtx()
		if ctx.Err() != nil {
			return
		}
		if !beat(ctx, due) {
			n.retryHeartbeat(due, next, attempt+1, beat)
		}
	})
}

// renew writes one renewal with the cached Lease (one request, as the
// kubelet does), falling back to a get or create when the cache is stale.
// It reports false if the renewal failed and should be retried.
func (n *node) renew(ctx context.Context, due time.Time) bool {
	n.mu.Lock()
	if n.mu.failed || n.mu.lease == nil {
		n.mu.Unlock()
		return true
	}
	l := n.mu.lease.DeepCopy()
	nodeObj := n.mu.obj
	n.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, n.s.cfg.RenewInterval)
	defer cancel()
	n.leaseSpec(l, nodeObj, n.s.cfg.Clock.Now())
	got, err := n.s.beats.updateLease(ctx, l)
	if apierrors.IsConflict(err) {
		// Usually our own earlier renewal, applied after its client timed
		// out: take the server's copy and renew that.
		leases := n.s.client.CoordinationV1().Leases(LeaseNamespace)
		if got, err = leases.Get(ctx, n.name, metav1.GetOptions{}); err == nil {
			n.leaseSpec(got, nodeObj, n.s.cfg.Clock.Now())
			got, err = n.s.beats.updateLease(ctx, got)
		}
	}
	if apierrors.IsNotFound(err) {
		err = n.ensureLease(ctx)
	} else if err == nil {
		got.ManagedFields = nil // unused here; see doc.go, Memory
		n.mu.Lock()
		n.mu.lease = got
		n.mu.Unlock()
	}
	if err != nil {
		n.s.counters.renewalErrors.Add(1)
		n.s.metrics.renewal(false)
		if n.runCtx().Err() == nil {
			n.s.cfg.Logger.Debug("lease renewal failed", "node", n.name, "err", err)
		}
		return false
	}
	n.s.counters.renewals.Add(1)
	n.s.metrics.renewal(true)
	n.observeHeartbeat(due)
	return true
}

// observeHeartbeat records an acknowledged heartbeat that was due at due.
func (n *node) observeHeartbeat(due time.Time) {
	now := n.s.cfg.Clock.Now()
	late := max(now.Sub(due), 0)
	n.s.lateness.observe(late)
	n.s.metrics.observeLateness(late.Seconds())
	n.acked(now)
}
