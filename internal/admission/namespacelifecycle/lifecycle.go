package namespacelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// NamespaceGetter reads a namespace by name; one that does not exist is an
// error for which apierrors.IsNotFound holds. The object may be shared:
// the plugin only reads it.
type NamespaceGetter func(ctx context.Context, name string) (runtime.Object, error)

// Plugin refuses creates in namespaces that are missing or terminating.
type Plugin struct {
	admission.Handler
	get NamespaceGetter
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New is the plugin reading namespaces through get, once per create of a
// namespaced object, so get should be served from memory.
func New(get NamespaceGetter) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), get: get}
}

// Admit refuses a create in a namespace that does not exist (404 for the
// namespace, as upstream) or is being deleted (403). Cluster-scoped
// objects, namespaces among them, pass.
//
// It is a mutating plugin that mutates nothing, as upstream's is: it runs
// first, so a request into a missing namespace costs no further work.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Namespace == "" || a.Subresource != "" {
		return nil
	}
	ns, err := p.get(ctx, a.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
		}
		return err
	}
	if m, err := meta.Accessor(ns); err == nil && m.GetDeletionTimestamp() != nil {
		return apierrors.NewForbidden(corev1.Resource("namespaces"), a.Namespace, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	}
	return nil
}
