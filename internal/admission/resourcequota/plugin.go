package resourcequota

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/quota"
)

// Quotas is how the plugin reads and charges a namespace's quotas.
// Returned quotas are the caller's to change.
type Quotas interface {
	// Cached returns ns's quotas as the watch cache holds them: read on
	// every namespaced write, so it must be cheap; it may be a watch
	// event behind the store.
	Cached(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error)
	// Current returns ns's quotas as stored now.
	Current(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error)
	// UpdateStatus stores q's status if q's resourceVersion is still the
	// stored one, and fails with a conflict (apierrors.IsConflict) if not.
	UpdateStatus(ctx context.Context, q *corev1.ResourceQuota) error
}

// maxRetries is how often a batch whose quota writes conflicted is checked
// again against the quotas as they now stand (upstream's 3).
const maxRetries = 3

// batchTimeout bounds a batch's store reads and writes: the batch outlives
// the request of the waiter that runs it, so it does not use its context.
const batchTimeout = 30 * time.Second

// Plugin is the ResourceQuota validating admission plugin.
type Plugin struct {
	admission.Handler
	quotas Quotas
	clock  clock.PassiveClock

	mu struct {
		sync.Mutex
		// batches holds the namespaces with a batch running; waiters
		// append to it and the runner drains it.
		batches map[string]*batch
	}
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New is the plugin over quotas, judging pods' deletion grace periods
// on clk.
func New(quotas Quotas, clk clock.PassiveClock) *Plugin {
	p := &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), quotas: quotas, clock: clk}
	p.mu.batches = map[string]*batch{}
	return p
}

// batch is a namespace's requests waiting for its runner.
type batch struct {
	waiting []*waiter
}

// waiter is one request in a batch; done is closed once err is final.
type waiter struct {
	a    *admission.Attributes
	e    quota.Evaluator
	err  error
	done chan struct{}
}

// Validate charges a's object to the quotas of its namespace that track
// it, or refuses it.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Subresource != "" || a.Namespace == "" || a.Object == nil {
		return nil
	}
	gr := a.GroupResource()
	if quota.Ignored(gr) {
		return nil
	}
	cached, err := p.quotas.Cached(ctx, a.Namespace)
	if err != nil || len(cached) == 0 {
		return err
	}
	e := quota.For(gr)
	if a.Operation == admission.Update && !e.ChargesUpdates() {
		return nil
	}
	// Only requests some quota tracks wait for a batch; the batch checks
	// against the stored quotas, so the cache's lag only matters for a
	// quota created or changed in the last moment (as upstream's
	// informer-fed lister).
	tracked := false
	for _, q := range cached {
		if ok, err := e.Matches(q, a.Object); err != nil {
			return admission403(a, err)
		} else if ok {
			tracked = true
			break
		}
	}
	if !tracked {
		return nil
	}
	return p.evaluate(ctx, a, e)
}

// evaluate queues a in its namespace's batch, runs the batch if none is
// running, and returns a's verdict.
func (p *Plugin) evaluate(ctx context.Context, a *admission.Attributes, e quota.Evaluator) error {
	w := &waiter{a: a, e: e, done: make(chan struct{})}
	p.mu.Lock()
	b, running := p.mu.batches[a.Namespace]
	if !running {
		b = &batch{}
		p.mu.batches[a.Namespace] = b
	}
	b.waiting = append(b.waiting, w)
	p.mu.Unlock()
	if running {
		select {
		case <-w.done:
			return w.err
		case <-ctx.Done():
			// The runner still decides (and may charge) it; the
			// controller's recount returns what a gone request held.
			return apierrors.NewTimeoutError(fmt.Sprintf("waiting for quota admission: %v", ctx.Err()), 1)
		}
	}
	// This request runs the namespace's batches until none is waiting.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()
	for {
		p.mu.Lock()
		ws := b.waiting
		b.waiting = nil
		if len(ws) == 0 {
			delete(p.mu.batches, a.Namespace)
			p.mu.Unlock()
			return w.err
		}
		p.mu.Unlock()
		p.run(bctx, a.Namespace, ws)
		for _, x := range ws {
			close(x.done)
		}
	}
}

// run decides every waiter of one batch: checks them in order against
// the stored quotas, writes the quotas they changed, and on a conflict
// checks the ones admitted so far again against the conflicting quotas
// as they now stand.
func (p *Plugin) run(ctx context.Context, ns string, ws []*waiter) {
	quotas, err := p.quotas.Current(ctx, ns)
	if err != nil {
		for _, w := range ws {
			w.err = err
		}
		return
	}
	pending := ws
	for retries := maxRetries; ; retries-- {
		work := copyQuotas(quotas)
		var admitted []*waiter
		for _, w := range pending {
			next, err := checkRequest(work, w.a, w.e, p.clock.Now())
			switch {
			case err != nil:
				w.err = err
			case w.a.DryRun:
				// Checked, not charged.
				w.err = nil
			default:
				w.err = nil
				work = next
				admitted = append(admitted, w)
			}
		}
		var failed []string
		var lastErr error
		for i, q := range work {
			if quota.Equals(q.Status.Used, quotas[i].Status.Used) {
				continue
			}
			if err := p.quotas.UpdateStatus(ctx, q); err != nil {
				failed = append(failed, q.Name)
				lastErr = err
			}
		}
		if len(failed) == 0 {
			return
		}
		if retries == 0 || !apierrors.IsConflict(lastErr) {
			for _, w := range admitted {
				w.err = lastErr
			}
			return
		}
		current, err := p.quotas.Current(ctx, ns)
		if err != nil {
			for _, w := range admitted {
				w.err = err
			}
			return
		}
		quotas = quotas[:0]
		for _, q := range current {
			for _, name := range failed {
				if q.Name == name {
					quotas = append(quotas, q)
				}
			}
		}
		pending = admitted
	}
}

func copyQuotas(qs []*corev1.ResourceQuota) []*corev1.ResourceQuota {
	out := make([]*corev1.ResourceQuota, len(qs))
	for i, q := range qs {
		out[i] = q.DeepCopy()
	}
	return out
}

// checkRequest is upstream's CheckRequest: the quotas after charging a to
// those of quotas that track it (quotas itself is not changed), or the
// 403 refusing it.
func checkRequest(quotas []*corev1.ResourceQuota, a *admission.Attributes, e quota.Evaluator, now time.Time) ([]*corev1.ResourceQuota, error) {
	var interesting []int
	for i, q := range quotas {
		match, err := e.Matches(q, a.Object)
		if err != nil {
			return nil, admission403(a, err)
		}
		if !match {
			continue
		}
		restricted := e.MatchingResources(quota.Names(q.Status.Hard))
		if err := e.Constraints(restricted, a.Object); err != nil {
			return nil, admission403(a, fmt.Errorf("failed quota: %s: %w", q.Name, err))
		}
		for _, n := range restricted {
			if _, ok := q.Status.Used[n]; !ok {
				return nil, admission403(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, quota.PrettyPrintNames(restricted)))
			}
		}
		interesting = append(interesting, i)
	}
	if len(interesting) == 0 {
		return quotas, nil
	}
	delta, err := e.Usage(a.Object, now)
	if err != nil {
		return nil, admission403(a, err)
	}
	if neg := quota.IsNegative(delta); len(neg) > 0 {
		return nil, admission403(a, fmt.Errorf("quota usage is negative for resource(s): %s", quota.PrettyPrintNames(neg)))
	}
	if a.Operation == admission.Update {
		if a.OldObject == nil {
			return nil, admission403(a, fmt.Errorf("unable to get previous usage since prior version of object was not found"))
		}
		// An update is charged what it adds to the stored object's usage.
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetResourceVersion() != "" {
			prev, err := e.Usage(a.OldObject, now)
			if err != nil {
				return nil, admission403(a, err)
			}
			delta = quota.SubtractWithNonNegativeResult(delta, prev)
		}
	}
	delta = quota.RemoveZeros(delta)
	if len(delta) == 0 {
		return quotas, nil
	}
	out := make([]*corev1.ResourceQuota, len(quotas))
	copy(out, quotas)
	for _, i := range interesting {
		q := quotas[i]
		hard := quota.Names(q.Status.Hard)
		requested := quota.Mask(delta, hard)
		used := quota.Add(q.Status.Used, requested)
		if ok, exceeded := quota.LessThanOrEqual(quota.Mask(used, quota.Names(requested)), q.Status.Hard); !ok {
			return nil, admission403(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				quota.PrettyPrint(quota.Mask(requested, exceeded)),
				quota.PrettyPrint(quota.Mask(q.Status.Used, exceeded)),
				quota.PrettyPrint(quota.Mask(q.Status.Hard, exceeded))))
		}
		charged := q.DeepCopy()
		charged.Status.Used = used
		out[i] = charged
	}
	return out, nil
}

// admission403 is upstream's admission.NewForbidden: a 403 naming the
// object being written.
func admission403(a *admission.Attributes, err error) error {
	name := a.Name
	if m, merr := meta.Accessor(a.Object); merr == nil && m.GetName() != "" {
		name = m.GetName()
	}
	return apierrors.NewForbidden(a.GroupResource(), name, err)
}
