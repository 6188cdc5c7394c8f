package upstream

import (
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// ListerWatchers gives a ListerWatcher over a served resource's watch
// cache (the API server's ListerWatcher).
type ListerWatchers func(gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error)

// InformerFactory returns a SharedInformerFactory whose informers for
// namespaces and the admissionregistration.k8s.io/v1 resources read
// through lw (the watch caches) rather than client; informers for
// anything else go through client. Start it, and wait for it, as any
// factory.
func InformerFactory(client kubernetes.Interface, lw ListerWatchers) (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactory(client, 0)
	for _, t := range []struct {
		gvr schema.GroupVersionResource
		obj runtime.Object
	}{
		{corev1.SchemeGroupVersion.WithResource("namespaces"), &corev1.Namespace{}},
		{admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), &admissionregistrationv1.MutatingWebhookConfiguration{}},
		{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), &admissionregistrationv1.ValidatingWebhookConfiguration{}},
		{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), &admissionregistrationv1.ValidatingAdmissionPolicy{}},
		{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}},
	} {
		w, err := lw(t.gvr)
		if err != nil {
			return nil, fmt.Errorf("informer for %s: %w", t.gvr, err)
		}
		obj := t.obj
		// The factory keeps the first informer registered for a type, so
		// the typed accessors the plugins call return these.
		f.InformerFor(obj, func(kubernetes.Interface, time.Duration) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(w, obj, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		})
	}
	return f, nil
}
