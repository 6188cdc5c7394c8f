package apiserver

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission/resourcequota"
	"github.com/myriad-k8s/myriad/internal/cache"
)

var (
	resourceQuotasGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")
	limitRangesGVR    = corev1.SchemeGroupVersion.WithResource("limitranges")
)

// quotaStore is resourcequota.Quotas over the resourcequotas handler.
type quotaStore struct{ h *resourceHandler }

var _ resourcequota.Quotas = quotaStore{}

// Cached lists ns's quotas from the watch cache as it stands (no
// consistent read: that asks the store for its revision, which every
// namespaced write would pay).
func (q quotaStore) Cached(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	return cachedList[*corev1.ResourceQuota](ctx, q.h, ns)
}

// Current lists ns's quotas from the store.
func (q quotaStore) Current(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	kvs, _, err := q.h.objects.store.List(ctx, q.h.objects.namespacePrefix(ns))
	if err != nil {
		return nil, fmt.Errorf("listing resource quotas of %s: %w", ns, err)
	}
	out := make([]*corev1.ResourceQuota, 0, len(kvs))
	for _, kv := range kvs {
		obj, err := q.h.objects.decode(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, obj.(*corev1.ResourceQuota))
	}
	return out, nil
}

// UpdateStatus writes rq as it is (admission changed only its status)
// if its resourceVersion is still the stored one.
func (q quotaStore) UpdateStatus(ctx context.Context, rq *corev1.ResourceQuota) error {
	rev, err := strconv.ParseInt(rq.ResourceVersion, 10, 64)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("resource quota %s/%s: resourceVersion %q: %w", rq.Namespace, rq.Name, rq.ResourceVersion, err))
	}
	_, err = q.h.objects.update(ctx, rq.Namespace, rq.Name, rq, rev)
	return err
}

// cachedList lists h's objects in ns from its watch cache as it stands.
// The objects may be shared with the cache: callers must not change them.
// A namespace without any costs a btree seek, not a list: admission asks
// this on every write.
func cachedList[T runtime.Object](ctx context.Context, h *resourceHandler, ns string) ([]T, error) {
	if has, ok := h.cache.HasNamespace(ns); ok && !has {
		return nil, nil
	}
	var out []T
	_, err := h.cache.List(ctx, cache.ListOptions{Namespace: ns, ResourceVersion: "0"}, func(obj runtime.Object) error {
		out = append(out, obj.(T))
		return nil
	})
	return out, err
}
