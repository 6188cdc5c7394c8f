package resourcequota

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
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
		// charges holds, for each write between Allocate and its
		// Finish, what Validate charged for it (nil until it does).
		charges map[*admission.Attributes]map[string]corev1.ResourceList
	}
}

var (
	_ admission.ValidationInterface = (*Plugin)(nil)
	_ admission.AllocationInterface = (*Plugin)(nil)
)

// New is the plugin over quotas, judging pods' deletion grace periods
// on clk.
func New(quotas Quotas, clk clock.PassiveClock) *Plugin {
	p := &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), quotas: quotas, clock: clk}
	p.mu.batches = map[string]*batch{}
	p.mu.charges = map[*admission.Attributes]map[string]corev1.ResourceList{}
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
	// attempt is what the current attempt charges each quota; charged is
	// what stored quota writes hold for it, by quota name.
	attempt, charged map[string]corev1.ResourceList
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
	// Even a refused request may hold charges: written to one quota
	// before another refused it on a retry.
	charged, err := p.evaluate(ctx, a, e)
	if len(charged) > 0 {
		p.mu.Lock()
		if _, ok := p.mu.charges[a]; ok {
			p.mu.charges[a] = charged
		}
		p.mu.Unlock()
	}
	return err
}

// Allocate does not allocate: it is how the plugin learns whether the
// write it charged was stored. The chain calls Validate between Allocate
// and Finish, and Finish(false) (the write was refused after Validate,
// lost its compare-and-swap, or its name was taken) gives back what
// Validate charged, so a retried `kubectl create` of an existing object
// does not hold a quota until the next recount. Upstream leaves that to
// the controller's resync.
func (p *Plugin) Allocate(ctx context.Context, a *admission.Attributes) (admission.Finish, error) {
	if a.Subresource != "" || a.Namespace == "" || a.DryRun || quota.Ignored(a.GroupResource()) {
		return admission.NoFinish, nil
	}
	cached, err := p.quotas.Cached(ctx, a.Namespace)
	if err != nil || len(cached) == 0 {
		return admission.NoFinish, err
	}
	p.mu.Lock()
	p.mu.charges[a] = nil
	p.mu.Unlock()
	return func(written bool) {
		p.mu.Lock()
		charged := p.mu.charges[a]
		delete(p.mu.charges, a)
		p.mu.Unlock()
		if !written && len(charged) > 0 {
			p.refund(context.WithoutCancel(ctx), a.Namespace, charged)
		}
	}, nil
}

// refund takes charged back from the quotas of ns, retrying conflicts.
// A refund that fails is left to the controller's recount.
func (p *Plugin) refund(ctx context.Context, ns string, charged map[string]corev1.ResourceList) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeout)
	defer cancel()
	for range maxRetries + 1 {
		quotas, err := p.quotas.Current(ctx, ns)
		if err != nil {
			return
		}
		conflicted := false
		for _, q := range quotas {
			delta, ok := charged[q.Name]
			if !ok {
				continue
			}
			for name, d := range delta {
				if used, ok := q.Status.Used[name]; ok {
					used.Sub(d)
					if used.Sign() < 0 {
						used = resource.Quantity{Format: used.Format}
					}
					q.Status.Used[name] = used
				}
			}
			err := p.quotas.UpdateStatus(ctx, q)
			switch {
			case err == nil:
				delete(charged, q.Name)
			case apierrors.IsConflict(err):
				conflicted = true
			default:
				delete(charged, q.Name)
			}
		}
		if !conflicted {
			return
		}
	}
}

// evaluate queues a in its namespace's batch, runs the batch if none is
// running, and returns a's verdict and, when admitted, what it charged
// each quota.
func (p *Plugin) evaluate(ctx context.Context, a *admission.Attributes, e quota.Evaluator) (map[string]corev1.ResourceList, error) {
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
			return w.charged, w.err
		case <-ctx.Done():
			// The runner still decides (and may charge) it; the
			// controller's recount returns what a gone request held.
			return nil, apierrors.NewTimeoutError(fmt.Sprintf("waiting for quota admission: %v", ctx.Err()), 1)
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
			return w.charged, w.err
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
			next, charge, err := checkRequest(work, w.a, w.e, p.clock.Now())
			w.attempt = charge
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
				continue
			}
			for _, w := range admitted {
				if c, ok := w.attempt[q.Name]; ok {
					if w.charged == nil {
						w.charged = map[string]corev1.ResourceList{}
					}
					w.charged[q.Name] = c
				}
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
// those of quotas that track it (quotas itself is not changed) and what
// it charged each by name, or the 403 refusing it.
func checkRequest(quotas []*corev1.ResourceQuota, a *admission.Attributes, e quota.Evaluator, now time.Time) ([]*corev1.ResourceQuota, map[string]corev1.ResourceList, error) {
	var interesting []int
	for i, q := range quotas {
		match, err := e.Matches(q, a.Object)
		if err != nil {
			return nil, nil, admission403(a, err)
		}
		if !match {
			continue
		}
		restricted := e.MatchingResources(quota.Names(q.Status.Hard))
		if err := e.Constraints(restricted, a.Object); err != nil {
			return nil, nil, admission403(a, fmt.Errorf("failed quota: %s: %w", q.Name, err))
		}
		for _, n := range restricted {
			if _, ok := q.Status.Used[n]; !ok {
				return nil, nil, admission403(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, quota.PrettyPrintNames(restricted)))
			}
		}
		interesting = append(interesting, i)
	}
	if len(interesting) == 0 {
		return quotas, nil, nil
	}
	delta, err := e.Usage(a.Object, now)
	if err != nil {
		return nil, nil, admission403(a, err)
	}
	if neg := quota.IsNegative(delta); len(neg) > 0 {
		return nil, nil, admission403(a, fmt.Errorf("quota usage is negative for resource(s): %s", quota.PrettyPrintNames(neg)))
	}
	if a.Operation == admission.Update {
		if a.OldObject == nil {
			return nil, nil, admission403(a, fmt.Errorf("unable to get previous usage since prior version of object was not found"))
		}
		// An update is charged what it adds to the stored object's usage.
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetResourceVersion() != "" {
			prev, err := e.Usage(a.OldObject, now)
			if err != nil {
				return nil, nil, admission403(a, err)
			}
			delta = quota.SubtractWithNonNegativeResult(delta, prev)
		}
	}
	delta = quota.RemoveZeros(delta)
	if len(delta) == 0 {
		return quotas, nil, nil
	}
	out := make([]*corev1.ResourceQuota, len(quotas))
	copy(out, quotas)
	charges := make(map[string]corev1.ResourceList, len(interesting))
	for _, i := range interesting {
		q := quotas[i]
		hard := quota.Names(q.Status.Hard)
		requested := quota.Mask(delta, hard)
		used := quota.Add(q.Status.Used, requested)
		if ok, exceeded := quota.LessThanOrEqual(quota.Mask(used, quota.Names(requested)), q.Status.Hard); !ok {
			return nil, nil, admission403(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				quota.PrettyPrint(quota.Mask(requested, exceeded)),
				quota.PrettyPrint(quota.Mask(q.Status.Used, exceeded)),
				quota.PrettyPrint(quota.Mask(q.Status.Hard, exceeded))))
		}
		charged := q.DeepCopy()
		charged.Status.Used = used
		out[i] = charged
		charges[q.Name] = requested
	}
	return out, charges, nil
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
