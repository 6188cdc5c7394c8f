package upstream

import (
	"context"
	"sync/atomic"

	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// Mutating runs an upstream mutating plugin as a Myriad one.
type Mutating struct {
	Plugin  apiadmission.MutationInterface
	Objects apiadmission.ObjectInterfaces
	// Configured, when set, reports whether anything is configured for
	// the plugin to act on (see Configured); when it says no, Admit
	// returns at once, so that a cluster without webhooks pays nothing.
	Configured *Configured
}

var _ admission.MutationInterface = (*Mutating)(nil)

func (m *Mutating) Handles(op admission.Operation) bool {
	return m.Plugin.Handles(apiadmission.Operation(op))
}

// Admit runs the plugin, and once more when a webhook with
// reinvocationPolicy IfNeeded asks for it because a later one changed the
// object (upstream's reinvocation handler).
func (m *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	if !m.Configured.Any() {
		return nil
	}
	ctx, attr := Attributes(ctx, a)
	if err := m.Plugin.Admit(ctx, attr, m.Objects); err != nil {
		return err
	}
	if rc := attr.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return m.Plugin.Admit(ctx, attr, m.Objects)
	}
	return nil
}

// Validating runs an upstream validating plugin as a Myriad one.
type Validating struct {
	Plugin  apiadmission.ValidationInterface
	Objects apiadmission.ObjectInterfaces
	// Configured: as Mutating's.
	Configured *Configured
}

var _ admission.ValidationInterface = (*Validating)(nil)

func (v *Validating) Handles(op admission.Operation) bool {
	return v.Plugin.Handles(apiadmission.Operation(op))
}

func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	if !v.Configured.Any() {
		return nil
	}
	ctx, attr := Attributes(ctx, a)
	return v.Plugin.Validate(ctx, attr, v.Objects)
}

// Configured counts the objects of one kind an informer holds (webhook
// configurations, policy bindings): the plugin that acts on them has
// nothing to do while there are none. The count may run ahead of or
// behind the plugin's own view by an event; either way the plugin is
// called whenever it could have something to do, except in the moment
// the last object is deleted.
type Configured struct{ n atomic.Int64 }

// Watch counts inf's objects.
func (c *Configured) Watch(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.n.Add(1) },
		DeleteFunc: func(any) { c.n.Add(-1) },
	})
	return err
}

// Any reports whether there is at least one; a nil Configured always
// says yes.
func (c *Configured) Any() bool { return c == nil || c.n.Load() > 0 }
