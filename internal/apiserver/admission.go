package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/certsubject"
	"github.com/myriad-k8s/myriad/internal/admission/defaultclass"
	"github.com/myriad-k8s/myriad/internal/admission/limitranger"
	"github.com/myriad-k8s/myriad/internal/admission/namespacelifecycle"
	"github.com/myriad-k8s/myriad/internal/admission/noderestriction"
	"github.com/myriad-k8s/myriad/internal/admission/priority"
	"github.com/myriad-k8s/myriad/internal/admission/resourcequota"
	"github.com/myriad-k8s/myriad/internal/admission/runtimeclass"
	"github.com/myriad-k8s/myriad/internal/admission/serviceip"
	"github.com/myriad-k8s/myriad/internal/admission/storageprotection"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/cache"
	"github.com/myriad-k8s/myriad/internal/storage"
)

var (
	servicesGVR        = corev1.SchemeGroupVersion.WithResource("services")
	priorityClassesGVR = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
	storageClassesGVR  = storagev1.SchemeGroupVersion.WithResource("storageclasses")
	ingressClassesGVR  = networkingv1.SchemeGroupVersion.WithResource("ingressclasses")
	runtimeClassesGVR  = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")
)

// newAdmission builds the admission chain over the server's handlers, in
// upstream's plugin order: NamespaceLifecycle, LimitRanger, ServiceAccount
// (with Config.ServiceAccounts), NodeRestriction, PodSecurity, Priority,
// DefaultStorageClass, StorageObjectInUseProtection, RuntimeClass,
// CertificateSubjectRestriction, DefaultIngressClass, then the ClusterIP
// and node port allocation, then MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy and ValidatingAdmissionWebhook
// (admission_ext.go), then Config.AdmissionPlugins, then
// ResourceQuota (last, as upstream's, so it charges what is stored). A
// plugin is added here or there; the REST
// handlers call the chain and need no change.
func (s *Server) newAdmission() (*admission.Chain, error) {
	var err error
	if s.services, err = serviceip.New(s.cfg.ServiceClusterIPRange, s.cfg.ServiceNodePortRange); err != nil {
		return nil, err
	}
	plugins := []admission.Interface{namespacelifecycle.New(s.namespaceForAdmission)}
	if h, ok := s.handlers[limitRangesGVR]; ok {
		plugins = append(plugins, limitranger.New(func(ctx context.Context, ns string) ([]*corev1.LimitRange, error) {
			return cachedList[*corev1.LimitRange](ctx, h, ns)
		}))
	}
	if sa := s.serviceAccountAdmission(); sa != nil {
		plugins = append(plugins, sa)
	}
	nodeRestriction, err := noderestriction.New(noderestriction.Config{Objects: s})
	if err != nil {
		return nil, err
	}
	plugins = append(plugins, nodeRestriction)
	if ps, err := s.podSecurity(); err != nil {
		return nil, err
	} else if ps != nil {
		plugins = append(plugins, ps)
	}
	if pcs, ok := s.handlers[priorityClassesGVR]; ok {
		plugins = append(plugins, priority.New(func(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
			obj, _, err := pcs.objects.get(ctx, "", name)
			if err != nil {
				return nil, err
			}
			return obj.(*schedulingv1.PriorityClass), nil
		}))
	}
	if h, ok := s.handlers[storageClassesGVR]; ok {
		plugins = append(plugins, defaultclass.NewStorageClass(h.listClasses))
	}
	plugins = append(plugins, storageprotection.New())
	if rcs, ok := s.handlers[runtimeClassesGVR]; ok {
		plugins = append(plugins, runtimeclass.New(func(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
			obj, _, err := rcs.objects.get(ctx, "", name)
			if err != nil {
				return nil, err
			}
			return obj.(*nodev1.RuntimeClass), nil
		}))
	}
	plugins = append(plugins, certsubject.New())
	if h, ok := s.handlers[ingressClassesGVR]; ok {
		plugins = append(plugins, defaultclass.NewIngressClass(h.listClasses))
	}
	plugins = append(plugins, s.services)
	extMutating, extValidating, err := s.newExtensionAdmission()
	if err != nil {
		return nil, err
	}
	plugins = append(append(plugins, extMutating...), extValidating...)
	plugins = append(plugins, s.cfg.AdmissionPlugins...)
	if h, ok := s.handlers[resourceQuotasGVR]; ok {
		plugins = append(plugins, resourcequota.New(quotaStore{h}, s.clock))
	}
	return admission.NewChain(plugins...)
}

// listClasses lists h's objects for a default-class plugin: a consistent
// read of the watch cache, so that a class created just before the object
// that needs it (one `kubectl apply` of both) is seen.
func (h *resourceHandler) listClasses(ctx context.Context) ([]metav1.Object, error) {
	var out []metav1.Object
	_, err := h.cache.List(ctx, cache.ListOptions{}, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// namespaceForAdmission reads a namespace from the namespaces cache as it
// stands (a store read per create cost a tenth of the create path) and
// only reads the store when the cache has not seen it yet, so a namespace
// created a moment ago is found.
func (s *Server) namespaceForAdmission(ctx context.Context, name string) (runtime.Object, error) {
	obj, err := s.nsMemo.get(ctx, s.namespaces, name)
	if cache.IsNotFound(err) {
		obj, _, err = s.namespaces.objects.get(ctx, "", name)
	}
	if cache.IsNotFound(err) {
		return nil, apierrors.NewNotFound(s.namespaces.objects.gr, name)
	}
	return obj, err
}

// storedServices lists and decodes every stored Service: from the watch
// cache by a consistent read (everything written before the call), where
// the cache keeps the stored bytes, else from the store. One that does
// not decode fails the list when strict, else is left out (the cache
// reports it). The cache saves a restart reading and decompressing 80,000
// Services from the store, filled as it is from its image.
func storedServices(ctx context.Context, h *resourceHandler, strict bool) ([]*corev1.Service, error) {
	if !h.storedProtobuf {
		kvs, _, err := h.objects.store.List(ctx, h.objects.prefix())
		if err != nil {
			return nil, err
		}
		return decodeServices(h, kvs, strict)
	}
	if err := h.cache.WaitReady(ctx); err != nil {
		return nil, err
	}
	var kvs []storage.KeyValue
	all := cache.ListOptions{Label: labels.Everything(), Field: fields.Everything()}
	if _, err := h.cache.ListStored(ctx, all, func(st cache.Stored) error {
		v, err := st.Value(nil)
		if err != nil {
			return err
		}
		kvs = append(kvs, storage.KeyValue{Key: st.Key, Value: v, ModRevision: st.ModRevision, CreateRevision: st.CreateRevision})
		return nil
	}); err != nil {
		return nil, err
	}
	return decodeServices(h, kvs, strict)
}

func decodeServices(h *resourceHandler, kvs []storage.KeyValue, strict bool) ([]*corev1.Service, error) {
	svcs := make([]*corev1.Service, 0, len(kvs))
	for _, kv := range kvs {
		obj, err := h.objects.decode(kv)
		if err != nil {
			if strict {
				return nil, err
			}
			continue
		}
		svcs = append(svcs, obj.(*corev1.Service))
	}
	return svcs, nil
}

// attributes describe a write of h's resource for the admission chain. A
// subresource whose object is of another kind (Binding, Scale) sets Kind
// itself.
func (h *resourceHandler) attributes(ctx context.Context, op admission.Operation, ns, name, subresource string, obj, old runtime.Object, opts writeOptions) *admission.Attributes {
	a := &admission.Attributes{
		Operation: op, Resource: h.res.GroupVersionResource(), Subresource: subresource,
		Kind: h.res.GroupVersionKind(), Namespace: ns, Name: name,
		Object: obj, OldObject: old, DryRun: opts.dryRun,
	}
	if u, ok := request.UserFrom(ctx); ok {
		a.User = u
	}
	var dryRun []string
	if opts.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	switch op {
	case admission.Create:
		a.Options = &metav1.CreateOptions{DryRun: dryRun, FieldManager: opts.manager()}
	case admission.Update:
		a.Options = &metav1.UpdateOptions{DryRun: dryRun, FieldManager: opts.manager()}
	}
	return a
}

// deleteAttributes describe a delete of ns/name with opts.
func (h *resourceHandler) deleteAttributes(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) *admission.Attributes {
	a := h.attributes(ctx, admission.Delete, ns, name, "", nil, nil, writeOptions{})
	a.DryRun = len(opts.DryRun) > 0 && opts.DryRun[0] == metav1.DryRunAll
	a.Options = opts
	return a
}
