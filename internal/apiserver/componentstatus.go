package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// componentStatusTimeout bounds each probe of a read, as upstream's
// probes have their own timeouts: a stuck store must not stall a list.
const componentStatusTimeout = 5 * time.Second

// componentStatusDeprecation is the warning upstream sends with every
// componentstatuses response.
const componentStatusDeprecation = "v1 ComponentStatus is deprecated in v1.19+"

// componentStatusHooks serves componentstatuses from probes made at read
// time; nothing is stored under the resource.
func (s *Server) componentStatusHooks(h *resourceHandler) {
	h.hooks.serve = (*Server).serveComponentStatuses
}

// component is one entry of componentstatuses and how to probe it: nil
// from probe is healthy.
type component struct {
	name  string
	probe func(ctx context.Context) error
}

// components are what upstream's kube-apiserver reports: the scheduler,
// the controller manager and each etcd server. Upstream probes the first
// two on their /healthz ports; here they may run in this process or
// another, so the honest sign of life both have is their leader-election
// Lease in kube-system being renewed. The storage entry keeps upstream's
// name "etcd-0" (clients and scripts look for it) whichever backend the
// store is, and asks the store's own health check, as /healthz does; each
// more shard (Config.Shards) follows as etcd-1, etcd-2, ….
func (s *Server) components() []component {
	out := []component{
		{"scheduler", func(ctx context.Context) error { return s.leaderLeaseFresh(ctx, "kube-scheduler") }},
		{"controller-manager", func(ctx context.Context) error { return s.leaderLeaseFresh(ctx, "kube-controller-manager") }},
	}
	for _, sh := range s.shards.all {
		out = append(out, component{sh.name, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, shardHealthTimeout)
			defer cancel()
			return boundedHealth(ctx, sh.store)
		}})
	}
	return out
}

// leaderLeaseFresh reports whether kube-system/name has a holder that
// renewed it within its lease duration.
func (s *Server) leaderLeaseFresh(ctx context.Context, name string) error {
	h, ok := s.handlers[coordinationv1.SchemeGroupVersion.WithResource("leases")]
	if !ok {
		return fmt.Errorf("leases are not served, so the leader Lease kube-system/%s cannot be read", name)
	}
	obj, _, err := h.objects.get(ctx, metav1.NamespaceSystem, name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no leader Lease kube-system/%s: not running, or running without leader election", name)
	}
	if err != nil {
		return fmt.Errorf("reading the leader Lease kube-system/%s: %w", name, err)
	}
	l := obj.(*coordinationv1.Lease)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return fmt.Errorf("the leader Lease kube-system/%s has no holder", name)
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return fmt.Errorf("the leader Lease kube-system/%s has never been renewed", name)
	}
	expiry := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if now := s.clock.Now(); now.After(expiry) {
		return fmt.Errorf("the leader Lease kube-system/%s held by %s was last renewed %s ago, more than its %ds",
			name, *l.Spec.HolderIdentity, now.Sub(l.Spec.RenewTime.Time).Round(time.Second), *l.Spec.LeaseDurationSeconds)
	}
	return nil
}

// componentStatus probes c into upstream's shape: one Healthy condition,
// message "ok" or the error.
func componentStatus(ctx context.Context, c component) *corev1.ComponentStatus {
	ctx, cancel := context.WithTimeout(ctx, componentStatusTimeout)
	defer cancel()
	cond := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}
	if err := c.probe(ctx); err != nil {
		cond = corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: err.Error()}
	}
	return &corev1.ComponentStatus{
		TypeMeta:   metav1.TypeMeta{Kind: "ComponentStatus", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: c.name},
		Conditions: []corev1.ComponentCondition{cond},
	}
}

// serveComponentStatuses answers get and list; every other verb is 405,
// as upstream's read-only REST.
func (s *Server) serveComponentStatuses(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	addWarning(w, componentStatusDeprecation)
	ctx := r.Context()
	switch info.Verb {
	case request.VerbGet:
		for _, c := range s.components() {
			if c.name == info.Name {
				h.respond(w, r, http.StatusOK, componentStatus(ctx, c))
				return
			}
		}
		// Upstream answers an unknown name with a 500 ("Component not
		// found"); a 404 is what every client expects of a missing object.
		s.writeError(w, r, apierrors.NewNotFound(h.objects.gr, info.Name))
	case request.VerbList:
		_, label, field, err := h.listOptions(r, "", false)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		choice, ok := s.negotiateOutput(r, true)
		if !ok {
			s.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", h.objects.gr, "", "unsupported Accept header", 0, false))
			return
		}
		var items []runtime.Object
		for _, c := range s.components() {
			cs := componentStatus(ctx, c)
			if ls, fs := h.attrs(cs); label.Matches(ls) && field.Matches(fs) {
				items = append(items, cs)
			}
		}
		out, err := h.listObject(choice, metav1.ListMeta{}, items)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeObject(w, r, http.StatusOK, choice, out)
	default:
		s.writeError(w, r, methodNotSupported(h, info.Verb))
	}
}
