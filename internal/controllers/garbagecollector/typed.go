package garbagecollector

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// typedResources are watched through the shared typed informers instead
// of metadata-only ones: the controllers that own pods, the node lifecycle
// controller (and in `myriad up` the scheduler) hold every pod and node
// typed anyway, so a metadata informer would be a second copy of their
// metadata and a second watch — at 200,000 pods, hundreds of megabytes.
// Upstream's collector reads every built-in type typed; the other types
// stay metadata-only here, since a typed informer the collector alone
// asked for would hold whole objects (Secrets, ConfigMaps) for nothing.
func typedResources() map[schema.GroupVersionResource]bool {
	return map[schema.GroupVersionResource]bool{
		corev1.SchemeGroupVersion.WithResource("pods"):  true,
		corev1.SchemeGroupVersion.WithResource("nodes"): true,
	}
}

// informerFor is gvr's informer: the typed one for typedResources, else a
// metadata-only one.
func (gc *Controller) informerFor(gvr schema.GroupVersionResource) (inf cache.SharedIndexInformer, typed bool, err error) {
	if gc.typedInformers != nil && typedResources()[gvr] {
		g, err := gc.typedInformers.ForResource(gvr)
		if err != nil {
			return nil, false, err
		}
		return g.Informer(), true, nil
	}
	return gc.metadataInformers.ForResource(gvr).Informer(), false, nil
}

// objectMeta is the metadata of an object from a monitor's informer,
// typed or metadata-only, without copying it.
func objectMeta(obj any) (*metav1.ObjectMeta, bool) {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return &o.ObjectMeta, true
	case metav1.ObjectMetaAccessor:
		m, ok := o.GetObjectMeta().(*metav1.ObjectMeta)
		return m, ok && m != nil
	}
	return nil, false
}

// cachedUID is the UID of an object from a monitor's informer ("" if it
// has none).
func cachedUID(obj any) types.UID {
	if m, ok := objectMeta(obj); ok {
		return m.UID
	}
	return ""
}
