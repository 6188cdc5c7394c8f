package aggregator

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Upstream's autoregister controller marks the APIServices it manages
// with this label: "onstart" for the server's built-in group versions,
// reconciled (and stale ones deleted) at start; "true" for those that
// come and go while it runs (CRD group versions).
const (
	AutoManagedLabel = "kube-aggregator.kubernetes.io/automanaged"
	manageOnStart    = "onstart"
	manageContinuous = "true"
)

// Priority orders a group version in discovery (an APIService's
// groupPriorityMinimum and versionPriority).
type Priority struct{ Group, Version int32 }

// CRDPriority is what upstream's CRD registration controller gives every
// CustomResourceDefinition group version.
var CRDPriority = Priority{Group: 1000, Version: 100}

// builtInPriorities are upstream's (kube-apiserver's apiVersionPriorities
// and the generic server's defaults) for the groups Myriad serves.
var builtInPriorities = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                                  {18000, 1},
	{Group: "apps", Version: "v1"}:                              {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                     {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:             {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:              {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                       {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                       {17500, 30},
	{Group: "batch", Version: "v1"}:                             {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:               {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:                 {17200, 15},
	{Group: "policy", Version: "v1"}:                            {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:         {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:                    {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:              {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}:      {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:                 {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:               {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                       {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:                  {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:                   {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:      {16100, 21},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}: {16700, 12},
	// The aggregator's own group, listed first among named groups as
	// upstream's discovery does (its APIRegistrationGroupPriority).
	{Group: "apiregistration.k8s.io", Version: "v1"}: {18000, 15},
}

// localRegistration is a Local APIService the aggregator manages.
type localRegistration struct {
	priority Priority
	managed  string
}

func localAPIService(gv schema.GroupVersion, p Priority, managed string) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{AutoManagedLabel: managed}},
		Spec:       apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
	}
}

// registerBuiltIn reconciles a Local APIService for every built-in group
// version and deletes the "onstart" ones the server no longer serves, as
// upstream's autoregister controller does at start. A group version
// without a known priority gets the lowest built-in one minus 100, the
// rule upstream's table states for new groups.
func (a *Aggregator) registerBuiltIn(ctx context.Context) error {
	want := map[string]bool{}
	var errs []error
	for _, gv := range a.cfg.LocalGroupVersions {
		p, ok := builtInPriorities[gv]
		if !ok {
			p = Priority{Group: 15700, Version: 9}
		}
		s := localAPIService(gv, p, manageOnStart)
		want[s.Name] = true
		a.mu.Lock()
		a.mu.local[gv] = localRegistration{priority: p, managed: manageOnStart}
		a.mu.Unlock()
		if err := a.ensureLocal(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	// Stale ones: read from the store, the informer may not have synced.
	list, err := a.listStored(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, s := range list {
		if s.Labels[AutoManagedLabel] == manageOnStart && !want[s.Name] {
			if err := a.cfg.Objects.Delete(ctx, apiServicesGVR, "", s.Name, s); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting stale APIService %s: %w", s.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// listStored lists APIServices through the informer's ListerWatcher,
// which reads the watch cache consistently.
func (a *Aggregator) listStored(ctx context.Context) ([]*apiregistrationv1.APIService, error) {
	lw, err := a.cfg.ListerWatcher(apiServicesGVR)
	if err != nil {
		return nil, err
	}
	obj, err := toolscache.ToListerWatcherWithContext(lw).ListWithContext(ctx, metav1.ListOptions{LabelSelector: labels.Set{AutoManagedLabel: manageOnStart}.String()})
	if err != nil {
		return nil, fmt.Errorf("listing APIServices: %w", err)
	}
	list, ok := obj.(*apiregistrationv1.APIServiceList)
	if !ok {
		return nil, fmt.Errorf("listing APIServices: got %T", obj)
	}
	out := make([]*apiregistrationv1.APIService, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// ensureLocal creates want or, when an APIService of that name exists
// with another spec, makes it Local with want's priorities (upstream
// takes over an APIService of a built-in group version the same way).
func (a *Aggregator) ensureLocal(ctx context.Context, want *apiregistrationv1.APIService) error {
	_, err := a.cfg.Objects.Create(ctx, apiServicesGVR, want.DeepCopy())
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating APIService %s: %w", want.Name, err)
		}
		return nil
	}
	obj, err := a.cfg.Objects.Get(ctx, apiServicesGVR, "", want.Name)
	if err != nil {
		return fmt.Errorf("reading APIService %s: %w", want.Name, err)
	}
	cur := obj.(*apiregistrationv1.APIService).DeepCopy()
	if cur.Spec.Service == nil && cur.Spec.GroupPriorityMinimum == want.Spec.GroupPriorityMinimum &&
		cur.Spec.VersionPriority == want.Spec.VersionPriority && cur.Labels[AutoManagedLabel] == want.Labels[AutoManagedLabel] {
		return nil
	}
	cur.Spec = want.Spec
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[AutoManagedLabel] = want.Labels[AutoManagedLabel]
	if _, err := a.cfg.Objects.Update(ctx, apiServicesGVR, cur); err != nil {
		return fmt.Errorf("updating APIService %s: %w", want.Name, err)
	}
	return nil
}

// RegisterLocal makes gv a Local APIService while the server serves it,
// for group versions that appear after start (a CustomResourceDefinition
// becoming established: call it with CRDPriority). Idempotent.
func (a *Aggregator) RegisterLocal(ctx context.Context, gv schema.GroupVersion, p Priority) error {
	a.mu.Lock()
	a.mu.local[gv] = localRegistration{priority: p, managed: manageContinuous}
	a.mu.Unlock()
	return a.ensureLocal(ctx, localAPIService(gv, p, manageContinuous))
}

// RemoveLocal deletes the APIService RegisterLocal made for gv (the last
// CRD of the group version is gone). An APIService someone else made,
// or made remote since, is left alone.
func (a *Aggregator) RemoveLocal(ctx context.Context, gv schema.GroupVersion) error {
	a.mu.Lock()
	delete(a.mu.local, gv)
	a.mu.Unlock()
	name := gv.Version + "." + gv.Group
	obj, err := a.cfg.Objects.Get(ctx, apiServicesGVR, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	s := obj.(*apiregistrationv1.APIService)
	if s.Spec.Service != nil || s.Labels[AutoManagedLabel] != manageContinuous {
		return nil
	}
	if err := a.cfg.Objects.Delete(ctx, apiServicesGVR, "", name, s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting APIService %s: %w", name, err)
	}
	return nil
}

// restoreLocal recreates the RegisterLocal APIServices that were
// deleted, as upstream's autoregister controller does for its
// continuously managed ones (the "onstart" ones it restores only at the
// next start).
func (a *Aggregator) restoreLocal(ctx context.Context) {
	a.mu.Lock()
	var missing []*apiregistrationv1.APIService
	for gv, reg := range a.mu.local {
		if reg.managed != manageContinuous {
			continue
		}
		if _, ok := a.apiServiceLister.get(gv.Version + "." + gv.Group); !ok {
			missing = append(missing, localAPIService(gv, reg.priority, reg.managed))
		}
	}
	a.mu.Unlock()
	for _, s := range missing {
		if err := a.ensureLocal(ctx, s); err != nil {
			a.log.Warn("cannot restore a local APIService", "apiservice", s.Name, "err", err)
		}
	}
}
