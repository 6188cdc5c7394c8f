package upstream

import (
	"context"

	apiadmission "k8s.io/apiserver/pkg/admission"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// Mutating runs an upstream mutating plugin as a Myriad one.
type Mutating struct {
	Plugin  apiadmission.MutationInterface
	Objects apiadmission.ObjectInterfaces
}

var _ admission.MutationInterface = (*Mutating)(nil)

func (m *Mutating) Handles(op admission.Operation) bool {
	return m.Plugin.Handles(apiadmission.Operation(op))
}

// Admit runs the plugin, and once more when a webhook with
// reinvocationPolicy IfNeeded asks for it because a later one changed the
// object (upstream's reinvocation handler).
func (m *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
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
}

var _ admission.ValidationInterface = (*Validating)(nil)

func (v *Validating) Handles(op admission.Operation) bool {
	return v.Plugin.Handles(apiadmission.Operation(op))
}

func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	ctx, attr := Attributes(ctx, a)
	return v.Plugin.Validate(ctx, attr, v.Objects)
}
