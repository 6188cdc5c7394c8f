package defaultclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// ClassLister lists every class of one kind (IngressClasses or
// StorageClasses). The objects may be shared: the plugin only reads them.
// A class created before the object being admitted must be in the list
// (a consistent read), or one `kubectl apply` of a class and the objects
// using it would race.
type ClassLister func(ctx context.Context) ([]metav1.Object, error)

// Plugin sets the default class on creates of one resource.
type Plugin struct {
	admission.Handler
	resource schema.GroupResource
	list     ClassLister
	// isDefault reports whether a class is marked as the default.
	isDefault func(metav1.Object) bool
	// classless returns the field to set on obj when it names no class,
	// nil when it names one.
	classless func(obj runtime.Object) **string
}

var _ admission.MutationInterface = (*Plugin)(nil)

// ingressClassAnnotation is the class annotation that predates
// spec.ingressClassName: an Ingress carrying it has a class.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// betaStorageClassAnnotation is the claim annotation that predates
// spec.storageClassName.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// NewIngressClass is upstream's DefaultIngressClass over the
// IngressClasses list returns.
func NewIngressClass(list ClassLister) *Plugin {
	return &Plugin{
		Handler:  admission.NewHandler(admission.Create),
		resource: networkingv1.Resource("ingresses"),
		list:     list,
		isDefault: func(c metav1.Object) bool {
			return c.GetAnnotations()[networkingv1.AnnotationIsDefaultIngressClass] == "true"
		},
		classless: func(obj runtime.Object) **string {
			ing, ok := obj.(*networkingv1.Ingress)
			if !ok || ing.Spec.IngressClassName != nil {
				return nil
			}
			if _, ok := ing.Annotations[ingressClassAnnotation]; ok {
				return nil
			}
			return &ing.Spec.IngressClassName
		},
	}
}

// NewStorageClass is upstream's DefaultStorageClass over the
// StorageClasses list returns. A claim naming the class "" asks for no
// class and keeps it.
func NewStorageClass(list ClassLister) *Plugin {
	return &Plugin{
		Handler:   admission.NewHandler(admission.Create),
		resource:  corev1.Resource("persistentvolumeclaims"),
		list:      list,
		isDefault: registry.IsDefaultStorageClass,
		classless: func(obj runtime.Object) **string {
			pvc, ok := obj.(*corev1.PersistentVolumeClaim)
			if !ok || pvc.Spec.StorageClassName != nil {
				return nil
			}
			if _, ok := pvc.Annotations[betaStorageClassAnnotation]; ok {
				return nil
			}
			return &pvc.Spec.StorageClassName
		},
	}
}

// Admit names the default class on a created object that names none. No
// default class leaves the object as it is; a failed lookup is 403, as
// upstream.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.GroupResource() != p.resource || a.Subresource != "" {
		return nil
	}
	field := p.classless(a.Object)
	if field == nil {
		return nil
	}
	def, err := p.defaultClass(ctx)
	if err != nil {
		return apierrors.NewForbidden(p.resource, a.Name, fmt.Errorf("looking up the default class: %w", err))
	}
	if def != "" {
		*field = &def
	}
	return nil
}

// defaultClass is the name of the newest class marked as default (the
// first by name among equally new ones), "" when none is: upstream's rule
// since several defaults became allowed, so that adding a new default
// takes effect without first unmarking the old one.
func (p *Plugin) defaultClass(ctx context.Context) (string, error) {
	classes, err := p.list(ctx)
	if err != nil {
		return "", err
	}
	var best metav1.Object
	for _, c := range classes {
		if !p.isDefault(c) {
			continue
		}
		if best == nil || newer(c, best) {
			best = c
		}
	}
	if best == nil {
		return "", nil
	}
	return best.GetName(), nil
}

func newer(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp().UnixNano(), b.GetCreationTimestamp().UnixNano()
	if ta == tb {
		return a.GetName() < b.GetName()
	}
	return ta > tb
}
