package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/myriad-k8s/myriad/internal/cache"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// crdController is the API server's own loop over its CRDs, doing what
// upstream's apiextensions controllers do: it adds the cleanup finalizer,
// grants names (NamesAccepted, upstream's naming controller), serves the
// accepted versions and marks the CRD Established, and on deletion
// deletes every custom resource before letting the CRD go (the finalizer
// controller). It reads CRDs from their watch cache through an informer.
type crdController struct {
	s        *Server
	crds     *resourceHandler
	informer toolscache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	// synced: the CRDs present at start are served (a readiness check,
	// so a restarted server does not answer 404 for them).
	synced atomic.Bool
}

var crdsGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// crdResync is how often a terminating CRD whose custom resources still
// have finalizers is looked at again.
const crdResync = time.Second

// newCRDController builds the controller when the registry serves CRDs.
func (s *Server) newCRDController() {
	h, ok := s.handlers[crdsGVR]
	if !ok {
		return
	}
	c := &crdController{s: s, crds: h}
	c.informer = toolscache.NewSharedIndexInformer(&cacheListerWatcher{h: h}, &apiextensionsv1.CustomResourceDefinition{}, 0, toolscache.Indexers{
		"group": func(obj interface{}) ([]string, error) {
			return []string{obj.(*apiextensionsv1.CustomResourceDefinition).Spec.Group}, nil
		},
	})
	enqueue := func(obj interface{}) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return
		}
		c.queue.Add(crd.Name)
		// A name freed or taken may settle another CRD of the group.
		others, _ := c.informer.GetIndexer().ByIndex("group", crd.Spec.Group)
		for _, o := range others {
			if other := o.(*apiextensionsv1.CustomResourceDefinition); other.Name != crd.Name {
				c.queue.Add(other.Name)
			}
		}
	}
	_, _ = c.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	s.crds = c
	s.AddReadinessCheck("custom-resource-definitions", c.synced.Load)
}

// startCRDController runs the controller until Stop.
func (s *Server) startCRDController() {
	c := s.crds
	if c == nil {
		return
	}
	// The queue's goroutines start with it: made here, not in New, so a
	// server that never starts leaves none behind.
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "crd_controller"})
	stop := s.stop
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		c.informer.Run(stop)
	}()
	go func() {
		defer s.wg.Done()
		c.run(stop)
	}()
}

func (c *crdController) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
		c.queue.ShutDown()
	}()
	if !toolscache.WaitForCacheSync(stop, c.informer.HasSynced) {
		return
	}
	// The CRDs there are at start are served, their caches filled, before
	// the server is ready (bounded: a cache that cannot fill, such as one
	// whose conversion webhook is down, must not keep it unready).
	keys := c.informer.GetIndexer().ListKeys()
	for _, key := range keys {
		if err := c.sync(ctx, key); err != nil {
			c.s.log.Warn("custom resource definition", "name", key, "err", err)
		}
	}
	c.s.notifyGroupVersions(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for _, key := range keys {
		c.waitServed(ctx, key, deadline)
	}
	c.synced.Store(true)
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		err := c.sync(ctx, key)
		c.s.notifyGroupVersions(ctx)
		switch {
		case err == nil:
			c.queue.Forget(key)
		case ctx.Err() == nil:
			c.s.log.Warn("custom resource definition", "name", key, "err", err)
			c.queue.AddRateLimited(key)
		}
		c.queue.Done(key)
	}
}

// sync brings one CRD and what is served for it up to date.
func (c *crdController) sync(ctx context.Context, name string) error {
	obj, exists, err := c.informer.GetIndexer().GetByKey(name)
	if err != nil {
		return err
	}
	if !exists {
		c.s.dropCRD(name)
		return nil
	}
	crd := obj.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
	if crd.DeletionTimestamp != nil {
		return c.finalize(ctx, crd)
	}
	if !apihelpers.CRDHasFinalizer(crd, registry.CRDCleanupFinalizer) {
		// The update's event brings the CRD back here.
		return c.update(ctx, name, func(cur *apiextensionsv1.CustomResourceDefinition) bool {
			if apihelpers.CRDHasFinalizer(cur, registry.CRDCleanupFinalizer) {
				return false
			}
			cur.Finalizers = append(cur.Finalizers, registry.CRDCleanupFinalizer)
			return true
		})
	}
	names, accepted, established := c.acceptNames(crd)
	if !reflect.DeepEqual(names, crd.Status.AcceptedNames) || conditionChanged(crd, accepted) || conditionChanged(crd, established) {
		return c.update(ctx, name, func(cur *apiextensionsv1.CustomResourceDefinition) bool {
			cur.Status.AcceptedNames = names
			apihelpers.SetCRDCondition(cur, accepted)
			apihelpers.SetCRDCondition(cur, established)
			return true
		})
	}
	if accepted.Status != apiextensionsv1.ConditionTrue && !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		c.s.dropCRD(name)
		return nil
	}
	serveErr := c.s.serveCRD(crd)
	if serveErr != nil || apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return serveErr
	}
	// Established once requests are answered: the caches are filled.
	c.waitServed(ctx, name, time.Now().Add(5*time.Second))
	return c.update(ctx, name, func(cur *apiextensionsv1.CustomResourceDefinition) bool {
		if apihelpers.IsCRDConditionTrue(cur, apiextensionsv1.Established) {
			return false
		}
		apihelpers.SetCRDCondition(cur, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
			Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
		})
		return true
	})
}

// waitServed waits until deadline at most for the named CRD's caches to
// fill.
func (c *crdController) waitServed(ctx context.Context, name string, deadline time.Time) {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		served, ok := c.s.servedCRD(name)
		if !ok {
			return
		}
		ready := true
		for _, v := range served.versions {
			ready = ready && v.h.cache.Ready()
		}
		if ready {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// update writes a change to the named CRD (metadata or status) on the
// server's authority; mutate reports whether there is one.
func (c *crdController) update(ctx context.Context, name string, mutate func(*apiextensionsv1.CustomResourceDefinition) bool) error {
	_, err := c.crds.systemUpdate(ctx, "", name, func(obj runtime.Object) (runtime.Object, error) {
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !mutate(crd) {
			return nil, errUnchanged
		}
		return crd, nil
	})
	if err == errUnchanged || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// errUnchanged ends an update with nothing to write.
var errUnchanged = fmt.Errorf("unchanged")

// conditionChanged reports whether want differs from crd's condition of
// its type in anything but the transition time.
func conditionChanged(crd *apiextensionsv1.CustomResourceDefinition, want apiextensionsv1.CustomResourceDefinitionCondition) bool {
	have := apihelpers.FindCRDCondition(crd, want.Type)
	return have == nil || have.Status != want.Status || have.Reason != want.Reason || have.Message != want.Message
}

// acceptNames is upstream's naming controller: the names crd may have,
// given those the other CRDs of its group hold, with the NamesAccepted
// condition and the Established one to go with it.
func (c *crdController) acceptNames(in *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := sets.New[string](), sets.New[string]()
	others, _ := c.informer.GetIndexer().ByIndex("group", in.Spec.Group)
	for _, o := range others {
		other := o.(*apiextensionsv1.CustomResourceDefinition)
		if other.Name == in.Name {
			continue
		}
		n := other.Status.AcceptedNames
		resources.Insert(n.Plural, n.Singular)
		resources.Insert(n.ShortNames...)
		kinds.Insert(n.Kind, n.ListKind)
	}
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	requested, accepted := in.Spec.Names, in.Status.AcceptedNames
	names := accepted
	if err := freshOrOurs(requested.Plural, accepted.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = requested.Plural
	}
	if err := freshOrOurs(requested.Singular, accepted.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = requested.Singular
	}
	if !reflect.DeepEqual(requested.ShortNames, accepted.ShortNames) {
		var errs []string
		ours := sets.New(accepted.ShortNames...)
		for _, sn := range requested.ShortNames {
			if ours.Has(sn) {
				continue
			}
			if err := freshOrOurs(sn, "", resources); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			// upstream's utilerrors aggregate formatting
			msg := errs[0]
			if len(errs) > 1 {
				msg = "[" + strings.Join(errs, ", ") + "]"
			}
			conflict("ShortNamesConflict", fmt.Errorf("%s", msg))
		} else {
			names.ShortNames = requested.ShortNames
		}
	}
	if err := freshOrOurs(requested.Kind, accepted.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = requested.Kind
	}
	if err := freshOrOurs(requested.ListKind, accepted.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = requested.ListKind
	}
	names.Categories = requested.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
		Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := apihelpers.FindCRDCondition(in, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: "Installing", Message: "the initial names have been accepted",
		}
	}
	return names, cond, established
}

// freshOrOurs is upstream's equalToAcceptedOrFresh.
func freshOrOurs(requested, accepted string, used sets.Set[string]) error {
	if requested == accepted || !used.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// finalize is upstream's finalizer controller for a deleted CRD: refuse
// new custom resources, delete every existing one (their finalizers run
// their course), then release the CRD.
func (c *crdController) finalize(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if served, ok := c.s.servedCRD(crd.Name); ok {
		served.terminating.Store(true)
	}
	if !apihelpers.CRDHasFinalizer(crd, registry.CRDCleanupFinalizer) {
		return nil
	}
	terminating := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
		Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
	}
	if conditionChanged(crd, terminating) && !apihelpers.IsCRDConditionFalse(crd, apiextensionsv1.Terminating) {
		return c.update(ctx, crd.Name, func(cur *apiextensionsv1.CustomResourceDefinition) bool {
			apihelpers.SetCRDCondition(cur, terminating)
			return true
		})
	}
	done := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
		Reason: "InstanceDeletionCompleted", Message: "removed all instances",
	}
	if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		served, ok := c.s.servedCRD(crd.Name)
		if !ok {
			// Deleted while this server was down: serve it again, to
			// find and delete its custom resources.
			if err := c.s.serveCRD(crd); err != nil {
				return err
			}
			if served, ok = c.s.servedCRD(crd.Name); !ok {
				return fmt.Errorf("custom resource definition %s: not served", crd.Name)
			}
			served.terminating.Store(true)
			c.waitServed(ctx, crd.Name, time.Now().Add(5*time.Second))
		}
		var h *resourceHandler
		for _, v := range served.versions {
			h = v.h
			break
		}
		if h != nil {
			remaining, err := c.deleteAll(ctx, h)
			if err != nil {
				return c.update(ctx, crd.Name, func(cur *apiextensionsv1.CustomResourceDefinition) bool {
					apihelpers.SetCRDCondition(cur, apiextensionsv1.CustomResourceDefinitionCondition{
						Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
						Reason: "InstanceDeletionFailed", Message: fmt.Sprintf("could not issue all deletes: %v", err),
					})
					return true
				})
			}
			if remaining > 0 {
				c.queue.AddAfter(crd.Name, crdResync)
				return nil
			}
		}
	} else {
		done.Reason, done.Message = "NeverEstablished", "resource was never established"
	}
	// Dropped when the CRD's deletion reaches the informer.
	return c.update(ctx, crd.Name, func(cur *apiextensionsv1.CustomResourceDefinition) bool {
		apihelpers.SetCRDCondition(cur, done)
		apihelpers.CRDRemoveFinalizer(cur, registry.CRDCleanupFinalizer)
		return true
	})
}

// deleteAll deletes every custom resource h serves, as a DELETE with
// default options would, and returns how many are still there (waiting
// for their finalizers).
func (c *crdController) deleteAll(ctx context.Context, h *resourceHandler) (int, error) {
	type target struct{ ns, name string }
	var targets []target
	_, err := h.cache.List(ctx, cache.ListOptions{}, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		targets = append(targets, target{m.GetNamespace(), m.GetName()})
		return nil
	})
	if err != nil {
		return 0, err
	}
	var errs []string
	remaining := 0
	sort.Slice(targets, func(i, j int) bool { return targets[i].ns+"/"+targets[i].name < targets[j].ns+"/"+targets[j].name })
	for _, t := range targets {
		_, deleted, err := h.deleteObject(ctx, t.ns, t.name, &metav1.DeleteOptions{}, false)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, err.Error())
		case !deleted:
			remaining++
		}
	}
	if len(errs) > 0 {
		return remaining, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return remaining, nil
}
