package storageprotection

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// The finalizers, upstream's names.
const (
	PVCFinalizer = "kubernetes.io/pvc-protection"
	PVFinalizer  = "kubernetes.io/pv-protection"
)

// Plugin adds the protection finalizers on create.
type Plugin struct {
	admission.Handler
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin.
func New() *Plugin { return &Plugin{Handler: admission.NewHandler(admission.Create)} }

// Admit adds the finalizer to a created claim or volume that lacks it.
func (p *Plugin) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Subresource != "" {
		return nil
	}
	switch a.GroupResource() {
	case corev1.Resource("persistentvolumeclaims"):
		if pvc, ok := a.Object.(*corev1.PersistentVolumeClaim); ok && !slices.Contains(pvc.Finalizers, PVCFinalizer) {
			pvc.Finalizers = append(pvc.Finalizers, PVCFinalizer)
		}
	case corev1.Resource("persistentvolumes"):
		if pv, ok := a.Object.(*corev1.PersistentVolume); ok && !slices.Contains(pv.Finalizers, PVFinalizer) {
			pv.Finalizers = append(pv.Finalizers, PVFinalizer)
		}
	}
	return nil
}
