package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// Finalizers the API server itself adds for propagation policies; the
// garbage collector removes them.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

func (h *resourceHandler) delete(w http.ResponseWriter, r *http.Request, ns, name string) {
	data, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	opts, err := h.s.decodeDeleteOptions(r, data)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	out, deleted, err := h.deleteObject(r.Context(), ns, name, opts, true)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	code := http.StatusOK
	// Upstream answers 202 only for a not-yet-deleted object whose client
	// asked for cascading with the deprecated orphanDependents=false.
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	h.respond(w, r, code, out)
}

// deleteObject deletes or marks the object for deletion. deleted reports
// whether it is gone from the store. With admit, the delete goes through
// admission: mutating before the object is read, validating on the object
// as read, before it is removed or marked (a pod's eviction has its own
// admission and deletes the pod without).
func (h *resourceHandler) deleteObject(ctx context.Context, ns, name string, opts *metav1.DeleteOptions, admit bool) (runtime.Object, bool, error) {
	dryRun := len(opts.DryRun) > 0 && opts.DryRun[0] == metav1.DryRunAll
	if opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("unsupported propagationPolicy %q", *opts.PropagationPolicy))
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		return nil, false, apierrors.NewBadRequest("gracePeriodSeconds must be >= 0")
	}
	var attrs *admission.Attributes
	if admit {
		attrs = h.deleteAttributes(ctx, ns, name, opts)
		if err := h.s.admission.Admit(ctx, attrs); err != nil {
			return nil, false, err
		}
	}
	// A lost compare-and-swap race is retried on the newer object until the
	// request ends, as upstream's conditional delete does.
	for {
		cur, rev, err := h.objects.get(ctx, ns, name)
		if err != nil {
			return nil, false, err
		}
		m, _ := meta.Accessor(cur)
		if err := checkPreconditions(h, m, opts.Preconditions); err != nil {
			return nil, false, err
		}
		if admit {
			attrs.OldObject = cur
			if err := h.s.admission.Validate(ctx, attrs); err != nil {
				return nil, false, err
			}
		}
		marked, changed := h.markForDeletion(cur, m, opts)
		if !marked {
			if dryRun {
				return cur, true, nil
			}
			if err := h.removeObject(ctx, ns, name, cur, rev, opts); err != nil {
				if apierrors.IsConflict(err) && ctx.Err() == nil {
					continue
				}
				return nil, false, err
			}
			return cur, true, nil
		}
		if !changed || dryRun {
			return cur, false, nil
		}
		out, err := h.objects.update(ctx, ns, name, cur, rev)
		if err != nil {
			if apierrors.IsConflict(err) && ctx.Err() == nil {
				continue
			}
			return nil, false, err
		}
		return out, false, nil
	}
}

func checkPreconditions(h *resourceHandler, m metav1.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		//lint:ignore ST1005 upstream's message, which clients match
		return apierrors.NewConflict(h.objects.gr, m.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		//lint:ignore ST1005 upstream's message, which clients match
		return apierrors.NewConflict(h.objects.gr, m.GetName(), fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// markForDeletion decides between removing the object now and marking it
// with a deletionTimestamp (graceful deletion, finalizers, propagation
// finalizers). It mutates cur when marking; changed reports whether cur
// differs from what is stored.
func (h *resourceHandler) markForDeletion(cur runtime.Object, m metav1.Object, opts *metav1.DeleteOptions) (marked, changed bool) {
	grace := int64(0)
	if h.hooks.gracePeriod != nil {
		grace = h.hooks.gracePeriod(cur, opts)
	}
	finalizers := m.GetFinalizers()
	policy := h.propagation(m, opts)
	// Propagation finalizers only make sense on objects that may own others,
	// and only while something (the garbage collector) removes them.
	if m.GetDeletionTimestamp() == nil || len(finalizers) > 0 {
		switch policy {
		case metav1.DeletePropagationOrphan:
			finalizers = withFinalizer(without(finalizers, finalizerForeground), finalizerOrphan)
		case metav1.DeletePropagationForeground:
			finalizers = withFinalizer(without(finalizers, finalizerOrphan), finalizerForeground)
		case metav1.DeletePropagationBackground:
			finalizers = without(without(finalizers, finalizerOrphan), finalizerForeground)
		}
	}
	keep := h.hooks.keepOnDelete != nil && h.hooks.keepOnDelete(cur)
	if len(finalizers) == 0 && grace == 0 && !keep {
		return false, false
	}
	if len(finalizers) != len(m.GetFinalizers()) {
		m.SetFinalizers(finalizers)
		changed = true
	}
	now := h.s.clock.Now()
	if m.GetDeletionTimestamp() == nil {
		ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		m.SetDeletionTimestamp(&ts)
		m.SetDeletionGracePeriodSeconds(&grace)
		changed = true
	} else if cg := m.GetDeletionGracePeriodSeconds(); cg != nil && grace < *cg {
		// A shorter grace period may replace a longer one, never the reverse.
		ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		if ts.Before(m.GetDeletionTimestamp()) {
			m.SetDeletionTimestamp(&ts)
		}
		m.SetDeletionGracePeriodSeconds(&grace)
		changed = true
		if grace == 0 && len(finalizers) == 0 && !keep {
			return false, false
		}
	}
	if h.hooks.markedForDeletion != nil && changed {
		h.hooks.markedForDeletion(cur)
	}
	return true, changed
}

// propagation is how deleting m treats its dependents, as upstream's
// shouldOrphanDependents and shouldDeleteDependents decide: the options
// first (the deprecated orphanDependents before propagationPolicy), then a
// propagation finalizer m already carries (a plain delete of an object
// being deleted in the foreground keeps it so), then the resource's
// default, Background unless the registry says otherwise.
func (h *resourceHandler) propagation(m metav1.Object, opts *metav1.DeleteOptions) metav1.DeletionPropagation {
	switch {
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		return metav1.DeletePropagationOrphan
	case opts.OrphanDependents != nil:
		return metav1.DeletePropagationBackground
	case opts.PropagationPolicy != nil:
		return *opts.PropagationPolicy
	}
	for _, f := range m.GetFinalizers() {
		switch f {
		case finalizerOrphan:
			return metav1.DeletePropagationOrphan
		case finalizerForeground:
			return metav1.DeletePropagationForeground
		}
	}
	if p := h.res.DefaultPropagation; p != "" {
		return p
	}
	return metav1.DeletePropagationBackground
}

func withFinalizer(list []string, f string) []string {
	for _, x := range list {
		if x == f {
			return list
		}
	}
	return append(append([]string(nil), list...), f)
}

func without(list []string, f string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}
