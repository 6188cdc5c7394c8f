package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// waitForDependents is how often an owner deleting its dependents in the
// foreground is re-checked besides the dependents' delete events.
const waitForDependents = 15 * time.Second

// ownerState is what a dependent's reference finds.
type ownerState int

const (
	ownerPresent ownerState = iota
	ownerAbsent
	// ownerWaiting: being deleted in the foreground, waiting for its
	// dependents to go.
	ownerWaiting
)

// live reads the object from the API, not the cache: nothing is deleted
// or released on a cached view alone.
func (gc *Controller) live(ctx context.Context, it item) (*metav1.PartialObjectMetadata, error) {
	m, err := gc.metadata.Resource(it.gvr).Namespace(it.namespace).Get(ctx, it.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s %s/%s: %w", it.gvr.Resource, it.namespace, it.name, err)
	}
	if m.UID != it.uid {
		return nil, nil
	}
	return m, nil
}

// ownersAllCached reports whether the cached object is not being deleted
// and every owner it names is cached, with the same UID, and not deleting
// its dependents.
func (gc *Controller) ownersAllCached(it item) bool {
	mon := gc.monitors.forGVR(it.gvr)
	if mon == nil {
		return false
	}
	obj, ok, _ := mon.informer.GetIndexer().GetByKey(cacheKey(it.namespace, it.name))
	if !ok {
		return false
	}
	m, ok := objectMeta(obj)
	if !ok || m.UID != it.uid || m.DeletionTimestamp != nil || len(m.OwnerReferences) == 0 {
		return false
	}
	for _, ref := range m.OwnerReferences {
		om := gc.monitors.forKind(refGroupKind(ref))
		if om == nil {
			return false
		}
		ns := ""
		if om.res.Namespaced {
			ns = m.Namespace
		}
		o, ok, _ := om.informer.GetIndexer().GetByKey(cacheKey(ns, ref.Name))
		if !ok {
			return false
		}
		owner, ok := objectMeta(o)
		if !ok || owner.UID != ref.UID || (owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents)) {
			return false
		}
	}
	return true
}

func cacheKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// owner classifies one owner reference of an object in namespace ns.
func (gc *Controller) owner(ctx context.Context, ns string, ref metav1.OwnerReference) (ownerState, error) {
	mon := gc.monitors.forKind(refGroupKind(ref))
	if mon == nil {
		// An owner kind we do not know (or cannot list) is never judged
		// absent: deleting on ignorance is the one mistake to avoid.
		return ownerPresent, nil
	}
	if !mon.res.Namespaced {
		ns = ""
	}
	key := ref.Name
	if ns != "" {
		key = ns + "/" + ref.Name
	}
	var m *metav1.ObjectMeta
	if obj, ok, _ := mon.informer.GetIndexer().GetByKey(key); ok && cachedUID(obj) == ref.UID {
		m, _ = objectMeta(obj)
	} else {
		// Not cached (or a different UID): the cache may lag; ask the API.
		live, err := gc.live(ctx, item{gvr: mon.res.GVR, namespace: ns, name: ref.Name, uid: ref.UID})
		if err != nil {
			return ownerPresent, err
		}
		if live == nil {
			return ownerAbsent, nil
		}
		m = &live.ObjectMeta
	}
	if m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) {
		return ownerWaiting, nil
	}
	return ownerPresent, nil
}

// processDelete handles one attemptToDelete item: an owner deleting its
// dependents in the foreground, or a dependent whose owners may be gone.
func (gc *Controller) processDelete(ctx context.Context, it item) error {
	// Every owned object is queued once when its informer first lists it;
	// almost all have live owners. Settle those from the cache alone, so a
	// takeover with 200,000 owned pods costs no API calls.
	if gc.ownersAllCached(it) {
		return nil
	}
	m, err := gc.live(ctx, it)
	if err != nil || m == nil {
		return err
	}
	if m.DeletionTimestamp != nil {
		if slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) {
			return gc.processDeletingDependents(ctx, it, &m.ObjectMeta)
		}
		return nil
	}
	if len(m.OwnerReferences) == 0 {
		return nil
	}
	var solid, dangling, waiting []metav1.OwnerReference
	for _, ref := range m.OwnerReferences {
		if gk := refGroupKind(ref); gc.monitors.forKind(gk) == nil {
			gc.unknown.add(gk, it)
		}
		st, err := gc.owner(ctx, m.Namespace, ref)
		if err != nil {
			return err
		}
		switch st {
		case ownerPresent:
			solid = append(solid, ref)
		case ownerAbsent:
			dangling = append(dangling, ref)
		case ownerWaiting:
			waiting = append(waiting, ref)
		}
	}
	switch {
	case len(solid) > 0:
		if len(dangling)+len(waiting) == 0 {
			return nil
		}
		// Another owner keeps it alive: drop only the references to owners
		// that are gone or going.
		return gc.patchOwnerRefs(ctx, it, &m.ObjectMeta, solid)
	case len(waiting) > 0 && len(gc.dependents(string(m.UID))) > 0:
		// An owner waits on us and we have dependents of our own: delete
		// in the foreground too, so the wait propagates down the chain.
		if gc.dependentDeletingDependents(m.UID) {
			// A dependent is itself waiting for its dependents: we may
			// be in an ownership cycle, where every object would wait on
			// the next forever. As upstream, stop blocking our owners
			// first; the cycle then unwinds from here.
			if err := gc.patchOwnerRefs(ctx, it, &m.ObjectMeta, unblocked(m.OwnerReferences)); err != nil {
				return err
			}
		}
		return gc.delete(ctx, it, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		if slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents) {
			policy = metav1.DeletePropagationOrphan
		} else if slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) {
			policy = metav1.DeletePropagationForeground
		}
		return gc.delete(ctx, it, policy)
	}
}

// processDeletingDependents deletes an owner's dependents and, once none
// that block it (blockOwnerDeletion) is left, removes its
// foregroundDeletion finalizer so the API removes it.
func (gc *Controller) processDeletingDependents(ctx context.Context, it item, m *metav1.ObjectMeta) error {
	blocking := 0
	for _, d := range gc.dependents(string(m.UID)) {
		if gc.blocks(d, m.UID) {
			gc.attemptToDelete.Add(d)
			blocking++
			continue
		}
		if cached := gc.cached(d); cached == nil || cached.DeletionTimestamp != nil {
			// Gone or already going (its own processing handles its
			// dependents; settling it here could recurse around an
			// ownership cycle).
			gc.attemptToDelete.Add(d)
			continue
		}
		// Settle a dependent that does not block now, while the owner
		// still says it is deleting its dependents: queued, it could be
		// looked at after the finalizer is gone, see an owner that is
		// merely terminating (another finalizer holds it) and stay.
		if err := gc.processDelete(ctx, d); err != nil {
			return err
		}
	}
	if blocking > 0 {
		return reconcile.RequeueAfter(waitForDependents)
	}
	return gc.removeFinalizer(ctx, it, m, metav1.FinalizerDeleteDependents)
}

// dependentDeletingDependents reports whether a cached dependent of
// owner is being deleted in the foreground (upstream's cycle check, with
// its false positives: unblocking costs only the ordering guarantee).
func (gc *Controller) dependentDeletingDependents(owner types.UID) bool {
	for _, d := range gc.dependents(string(owner)) {
		if c := gc.cached(d); c != nil && c.DeletionTimestamp != nil && slices.Contains(c.Finalizers, metav1.FinalizerDeleteDependents) {
			return true
		}
	}
	return false
}

// unblocked is refs with blockOwnerDeletion cleared.
func unblocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, len(refs))
	no := false
	for i, ref := range refs {
		out[i] = ref
		if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			out[i].BlockOwnerDeletion = &no
		}
	}
	return out
}

// cached is d as its informer holds it, nil when it holds nothing.
func (gc *Controller) cached(d item) *metav1.ObjectMeta {
	mon := gc.monitors.forGVR(d.gvr)
	if mon == nil {
		return nil
	}
	key := d.name
	if d.namespace != "" {
		key = d.namespace + "/" + d.name
	}
	obj, ok, _ := mon.informer.GetIndexer().GetByKey(key)
	if !ok {
		return nil
	}
	m, _ := objectMeta(obj)
	return m
}

// blocks reports whether the cached dependent d holds a reference to
// owner with blockOwnerDeletion set.
func (gc *Controller) blocks(d item, owner types.UID) bool {
	obj := gc.cached(d)
	if obj == nil {
		return false
	}
	for _, ref := range obj.OwnerReferences {
		if ref.UID == owner && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// processOrphan removes every dependent's reference to the owner, then the
// owner's orphan finalizer.
func (gc *Controller) processOrphan(ctx context.Context, it item) error {
	m, err := gc.live(ctx, it)
	if err != nil || m == nil {
		return err
	}
	if m.DeletionTimestamp == nil || !slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents) {
		return nil
	}
	for _, d := range gc.dependents(string(m.UID)) {
		dm, err := gc.live(ctx, d)
		if err != nil {
			return err
		}
		if dm == nil {
			continue
		}
		keep := slices.DeleteFunc(slices.Clone(dm.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == m.UID })
		if len(keep) == len(dm.OwnerReferences) {
			continue
		}
		if err := gc.patchOwnerRefs(ctx, d, &dm.ObjectMeta, keep); err != nil {
			return err
		}
	}
	return gc.removeFinalizer(ctx, it, &m.ObjectMeta, metav1.FinalizerOrphanDependents)
}

func (gc *Controller) delete(ctx context.Context, it item, policy metav1.DeletionPropagation) error {
	uid := it.uid
	err := gc.metadata.Resource(it.gvr).Namespace(it.namespace).Delete(ctx, it.name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", it.gvr.Resource, it.namespace, it.name, err)
	}
	if err == nil {
		gc.log.Debug("deleted", "resource", it.gvr.String(), "namespace", it.namespace, "name", it.name, "propagation", policy)
	}
	return nil
}

// patchOwnerRefs sets the object's ownerReferences to refs, conditional on
// the resourceVersion it was read at (a conflict retries from a fresh read).
func (gc *Controller) patchOwnerRefs(ctx context.Context, it item, m *metav1.ObjectMeta, refs []metav1.OwnerReference) error {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return gc.patchMeta(ctx, it, map[string]any{"ownerReferences": refs, "resourceVersion": m.ResourceVersion, "uid": m.UID})
}

func (gc *Controller) removeFinalizer(ctx context.Context, it item, m *metav1.ObjectMeta, f string) error {
	rest := slices.DeleteFunc(slices.Clone(m.Finalizers), func(x string) bool { return x == f })
	if rest == nil {
		rest = []string{}
	}
	return gc.patchMeta(ctx, it, map[string]any{"finalizers": rest, "resourceVersion": m.ResourceVersion, "uid": m.UID})
}

func (gc *Controller) patchMeta(ctx context.Context, it item, meta map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = gc.metadata.Resource(it.gvr).Namespace(it.namespace).Patch(ctx, it.name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching %s %s/%s: %w", it.gvr.Resource, it.namespace, it.name, err)
	}
	return nil
}
