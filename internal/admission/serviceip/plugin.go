package serviceip

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

var servicesResource = corev1.SchemeGroupVersion.WithResource("services")

var _ admission.AllocationInterface = (*Allocator)(nil)

// Handles: creates and updates allocate, deletes release.
func (a *Allocator) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || op == admission.Delete
}

// Allocate takes what a Service being created or updated needs and, on a
// delete, releases what the deleted Service held once the delete is
// stored. Status updates keep the spec and take nothing; other resources
// are not its business.
func (a *Allocator) Allocate(ctx context.Context, attrs *admission.Attributes) (admission.Finish, error) {
	if attrs.Resource != servicesResource || attrs.Subresource != "" {
		return admission.NoFinish, nil
	}
	switch attrs.Operation {
	case admission.Create:
		release, err := a.allocate(ctx, attrs.Object.(*corev1.Service))
		if err != nil {
			return nil, err
		}
		return func(written bool) {
			if !written {
				release()
			}
		}, nil
	case admission.Update:
		return a.reallocate(ctx, attrs.Object.(*corev1.Service), attrs.OldObject.(*corev1.Service))
	case admission.Delete:
		old := attrs.OldObject.(*corev1.Service)
		return func(written bool) {
			if written {
				a.releaseService(ctx, old)
			}
		}, nil
	}
	return admission.NoFinish, nil
}
