package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	"github.com/myriad-k8s/myriad/internal/controllers/resources"
)

// Name is the controller's name in --controllers.
const Name = "namespace"

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// Controller empties and finalizes terminating namespaces.
type Controller struct {
	reconcile.Base
	metadata metadata.Interface
}

// New registers a handler on the namespace informer.
func New(c *controllerctx.Context) (*Controller, error) {
	inf := c.Informers.Core().V1().Namespaces().Informer()
	ctrl := &Controller{
		metadata: c.Metadata,
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{
		// Retries back off from 100 ms to a minute: a namespace waiting on
		// pods' grace periods needs no faster polling. They never stop: a
		// terminating namespace gets no further event to revive it.
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, time.Minute),
		MaxRetries:  -1,
	})
	ctrl.Synced = []cache.InformerSynced{inf.HasSynced}
	if err := reconcile.Watch(inf, reconcile.Adds|reconcile.Updates, func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			ctrl.Queue.Add(ns.Name)
		}
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// errRemaining says content is left (pods in their grace period, objects
// with finalizers): retry later, it is not a failure.
var errRemaining = fmt.Errorf("content remaining: %w", reconcile.ErrRequeue)

// sync deletes the content of one terminating namespace and finalizes it.
// It reads the namespace from the API, not the cache, so it never acts on
// a stale view of the finalizers.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	res, discoveryErr := resources.Discover(c.Client.Discovery(), "list", "delete")
	st := c.deleteContent(ctx, name, res)
	conds := st.conditions(discoveryErr, c.Clock.Now())
	if err := c.updateConditions(ctx, ns, conds); err != nil {
		return err
	}
	if discoveryErr != nil || len(st.failures) > 0 {
		return fmt.Errorf("namespace %s: %v", name, errors.Join(append([]error{discoveryErr}, st.failures...)...))
	}
	if st.remaining > 0 {
		return fmt.Errorf("namespace %s: %d objects left: %w", name, st.remaining, errRemaining)
	}
	return c.finalize(ctx, ns)
}

// progress is what one pass over a namespace's resources found.
type progress struct {
	failures        []error
	remaining       int
	remainingByGR   map[string]int
	finalizersByKey map[string]int
}

// isPods: pods are deleted first. Upstream's ordered namespace deletion
// (GA in v1.34) removes pods, and waits for them to be gone, before
// anything they may depend on (their service accounts, secrets, config
// maps, network policies), so no pod runs on in a half-deleted namespace.
func isPods(gvr schema.GroupVersionResource) bool { return gvr.Group == "" && gvr.Resource == "pods" }

func (c *Controller) deleteContent(ctx context.Context, ns string, res []resources.Resource) progress {
	p := progress{remainingByGR: map[string]int{}, finalizersByKey: map[string]int{}}
	for _, r := range res {
		if isPods(r.GVR) {
			c.deleteResource(ctx, ns, r, &p)
		}
	}
	if p.remaining > 0 || len(p.failures) > 0 {
		return p
	}
	for _, r := range res {
		if r.Namespaced && !isPods(r.GVR) {
			c.deleteResource(ctx, ns, r, &p)
		}
	}
	return p
}

// deleteResource deletes every object of r in ns and records what is left.
func (c *Controller) deleteResource(ctx context.Context, ns string, r resources.Resource, p *progress) {
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	client := c.metadata.Resource(r.GVR).Namespace(ns)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return
		}
		p.failures = append(p.failures, fmt.Errorf("listing %s: %w", r.GVR.GroupResource(), err))
		return
	}
	if len(list.Items) == 0 {
		return
	}
	// One deletecollection where supported, else one delete per object;
	// objects already terminating are not asked again.
	if r.Has("deletecollection") {
		err = client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			p.failures = append(p.failures, fmt.Errorf("deleting %s: %w", r.GVR.GroupResource(), err))
		}
	} else {
		for _, item := range list.Items {
			if item.DeletionTimestamp != nil {
				continue
			}
			if err := client.Delete(ctx, item.Name, opts); err != nil && !apierrors.IsNotFound(err) {
				p.failures = append(p.failures, fmt.Errorf("deleting %s %s: %w", r.GVR.GroupResource(), item.Name, err))
			}
		}
	}
	after, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		p.failures = append(p.failures, fmt.Errorf("listing %s: %w", r.GVR.GroupResource(), err))
		return
	}
	if n := len(after.Items); n > 0 {
		p.remaining += n
		p.remainingByGR[r.GVR.GroupResource().String()] += n
		for _, item := range after.Items {
			for _, f := range item.Finalizers {
				p.finalizersByKey[f]++
			}
		}
	}
}

// conditions are upstream's namespace deletion conditions for this pass.
func (p progress) conditions(discoveryErr error, now time.Time) []corev1.NamespaceCondition {
	t := metav1.NewTime(now)
	cond := func(typ corev1.NamespaceConditionType, bad bool, badReason, okReason, msg string) corev1.NamespaceCondition {
		if bad {
			return corev1.NamespaceCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: t, Reason: badReason, Message: msg}
		}
		return corev1.NamespaceCondition{Type: typ, Status: corev1.ConditionFalse, LastTransitionTime: t, Reason: okReason}
	}
	var failMsgs []string
	for _, e := range p.failures {
		failMsgs = append(failMsgs, e.Error())
	}
	discoveryMsg := ""
	if discoveryErr != nil {
		discoveryMsg = "Discovery failed for some groups: " + discoveryErr.Error()
	}
	return []corev1.NamespaceCondition{
		cond(corev1.NamespaceDeletionDiscoveryFailure, discoveryErr != nil, "DiscoveryFailed", "ResourcesDiscovered", discoveryMsg),
		cond(corev1.NamespaceDeletionGVParsingFailure, false, "GroupVersionParsingFailed", "ParsedGroupVersions", ""),
		cond(corev1.NamespaceDeletionContentFailure, len(failMsgs) > 0, "ContentDeletionFailed", "ContentDeleted",
			"Failed to delete all resource types, "+fmt.Sprint(len(failMsgs))+" remaining: "+strings.Join(failMsgs, ", ")),
		cond(corev1.NamespaceContentRemaining, p.remaining > 0, "SomeResourcesRemain", "ContentRemoved",
			"Some resources are remaining: "+joinCounts(p.remainingByGR, "instances")),
		cond(corev1.NamespaceFinalizersRemaining, len(p.finalizersByKey) > 0, "SomeFinalizersRemain", "ContentHasNoFinalizers",
			"Some content in the namespace has finalizers remaining: "+joinCounts(p.finalizersByKey, "resource instances")),
	}
}

func joinCounts(m map[string]int, unit string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s has %d %s", k, m[k], unit)
	}
	return strings.Join(parts, ", ")
}

// updateConditions writes the conditions when their status or reason
// changed, keeping transition times of the unchanged ones.
func (c *Controller) updateConditions(ctx context.Context, ns *corev1.Namespace, conds []corev1.NamespaceCondition) error {
	changed := false
	next := ns.DeepCopy()
	for _, want := range conds {
		i := slices.IndexFunc(next.Status.Conditions, func(x corev1.NamespaceCondition) bool { return x.Type == want.Type })
		if i < 0 {
			next.Status.Conditions = append(next.Status.Conditions, want)
			changed = true
			continue
		}
		have := next.Status.Conditions[i]
		if have.Status != want.Status || have.Reason != want.Reason || (want.Status == corev1.ConditionTrue && have.Message != want.Message) {
			if have.Status == want.Status {
				want.LastTransitionTime = have.LastTransitionTime
			}
			next.Status.Conditions[i] = want
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if _, err := c.Client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating namespace %s status: %w", ns.Name, err)
	}
	return nil
}

// finalize removes the kubernetes finalizer; the API then deletes the
// namespace if no other finalizers remain.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	// Re-read: the status update above changed the resourceVersion.
	cur, err := c.Client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace %s: %w", ns.Name, err)
	}
	next := cur.DeepCopy()
	next.Spec.Finalizers = slices.DeleteFunc(next.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	if _, err := c.Client.CoreV1().Namespaces().Finalize(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
	}
	c.Log.Info("namespace emptied and finalized", "namespace", ns.Name)
	return nil
}
