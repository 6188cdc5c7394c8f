package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/encryption"
	"github.com/myriad-k8s/myriad/internal/protoprune"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
)

// objectStore is one resource's view of the store: its keys, its storage
// encoding, and typed reads and writes. It is the single place objects are
// turned into stored bytes and back.
type objectStore struct {
	res     *registry.Resource
	store   storage.Store
	codec   runtime.Serializer
	gvk     schema.GroupVersionKind
	gr      schema.GroupResource
	metrics *serverMetrics
	// metaField1: the kind's protobuf message has its ObjectMeta as field
	// 1, which passing stored bytes through and cutting managedFields out
	// of them rely on (metadataIsField1).
	metaField1 bool
	// indexSkip is what decodeForIndex leaves out (indexdecode.go), and
	// pruneBufs the buffers it builds the pruned messages in.
	indexSkip *protoprune.Plan
	pruneBufs sync.Pool
	// conv is set when res is served over another version's storage.
	conv *storageConversion
}

// storageConversion is how a resource served over another version's
// storage (registry.Resource.StorageVersion) turns its objects into stored
// ones and back: through the scheme, where the registry registered the
// pair's conversions.
type storageConversion struct {
	scheme  *runtime.Scheme
	storage *registry.Resource
	gvk     schema.GroupVersionKind
}

func newObjectStore(res *registry.Resource, st storage.Store, codec runtime.Serializer, metrics *serverMetrics, conv *storageConversion) *objectStore {
	o := &objectStore{
		res:        res,
		store:      st,
		codec:      codec,
		gvk:        res.GroupVersionKind(),
		gr:         res.GroupVersionResource().GroupResource(),
		metrics:    metrics,
		metaField1: metadataIsField1(res.New()),
		indexSkip:  indexSkip(res),
		conv:       conv,
	}
	if conv != nil {
		// Stored bytes are another Kind's: nothing may read them as
		// this one's message.
		o.metaField1 = false
	}
	return o
}

// prefix is the key prefix of every object of the resource ("…/").
func (o *objectStore) prefix() string { return o.res.StorageKeyPrefix + "/" }

// namespacePrefix is the key prefix of the objects in one namespace.
func (o *objectStore) namespacePrefix(ns string) string {
	if !o.res.Namespaced || ns == "" {
		return o.prefix()
	}
	return o.prefix() + ns + "/"
}

func (o *objectStore) key(ns, name string) string {
	if o.res.Namespaced {
		return o.prefix() + ns + "/" + name
	}
	return o.prefix() + name
}

// encode produces the stored bytes of obj. resourceVersion is never stored:
// the revision of the write is the version.
func (o *objectStore) encode(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(o.gvk)
	if o.conv != nil {
		stored := o.conv.storage.New()
		if err := o.conv.scheme.Convert(obj, stored, nil); err != nil {
			return nil, fmt.Errorf("converting %s %s to %s for storage: %w", o.gvk.Kind, m.GetName(), o.conv.gvk.GroupVersion(), err)
		}
		stored.GetObjectKind().SetGroupVersionKind(o.conv.gvk)
		obj = stored
	}
	var buf bytes.Buffer
	if err := o.codec.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encoding %s %s for storage: %w", o.gvk.Kind, m.GetName(), err)
	}
	return buf.Bytes(), nil
}

// decode turns a stored value into a typed object with TypeMeta and
// resourceVersion set. Decoded objects are shared read-only by the cache.
func (o *objectStore) decode(kv storage.KeyValue) (runtime.Object, error) {
	if o.conv != nil {
		return o.decodeConverted(kv)
	}
	obj, _, err := o.codec.Decode(kv.Value, nil, o.res.New())
	if err != nil {
		return nil, corruptValue(kv, err)
	}
	return o.withRevision(obj, kv.ModRevision)
}

// decodeConverted decodes a value stored in the storage version and
// converts it to the served one.
func (o *objectStore) decodeConverted(kv storage.KeyValue) (runtime.Object, error) {
	stored, _, err := o.codec.Decode(kv.Value, nil, o.conv.storage.New())
	if err != nil {
		return nil, corruptValue(kv, err)
	}
	obj := o.res.New()
	if err := o.conv.scheme.Convert(stored, obj, nil); err != nil {
		return nil, fmt.Errorf("%w: converting %s at revision %d to %s: %v", storage.ErrCorrupt, kv.Key, kv.ModRevision, o.gvk.GroupVersion(), err)
	}
	return o.withRevision(obj, kv.ModRevision)
}

// corruptValue is the error for a stored value that does not decode.
func corruptValue(kv storage.KeyValue, err error) error {
	if msg := encryption.DescribeUndecryptable(kv.Value); msg != "" {
		return fmt.Errorf("%w: decoding %s at revision %d: %s", storage.ErrCorrupt, kv.Key, kv.ModRevision, msg)
	}
	return fmt.Errorf("%w: decoding %s at revision %d: %v", storage.ErrCorrupt, kv.Key, kv.ModRevision, err)
}

// get reads the latest object straight from the store (writes need the
// newest revision for their compare-and-swap, not the cache's view).
func (o *objectStore) get(ctx context.Context, ns, name string) (runtime.Object, int64, error) {
	kv, obj, err := o.read(ctx, ns, name)
	if err != nil {
		return nil, 0, err
	}
	return obj, kv.ModRevision, nil
}

// read is get with the stored bytes.
func (o *objectStore) read(ctx context.Context, ns, name string) (storage.KeyValue, runtime.Object, error) {
	kv, obj, _, err := o.readStale(ctx, ns, name)
	return kv, obj, err
}

// staleGetter is a store whose values may be due for a rewrite although
// they decode unchanged: encryption.Store, for values encrypted with a
// provider or key that no longer writes.
type staleGetter interface {
	GetStale(ctx context.Context, key string) (storage.KeyValue, bool, error)
}

// readStale is read, and whether the stored value is due for a rewrite.
func (o *objectStore) readStale(ctx context.Context, ns, name string) (storage.KeyValue, runtime.Object, bool, error) {
	defer o.metrics.observeStorage("get", o.gr.String(), time.Now())
	var (
		kv    storage.KeyValue
		stale bool
		err   error
	)
	if sg, ok := o.store.(staleGetter); ok {
		kv, stale, err = sg.GetStale(ctx, o.key(ns, name))
	} else {
		kv, err = o.store.Get(ctx, o.key(ns, name))
	}
	if err != nil {
		return storage.KeyValue{}, nil, false, storageError(err, o.gr, name)
	}
	obj, err := o.decode(kv)
	if err != nil {
		return storage.KeyValue{}, nil, false, err
	}
	return kv, obj, stale, nil
}

func (o *objectStore) create(ctx context.Context, ns, name string, obj runtime.Object) (runtime.Object, error) {
	data, err := o.encode(obj)
	if err != nil {
		return nil, err
	}
	defer o.metrics.observeStorage("create", o.gr.String(), time.Now())
	rev, err := o.store.Create(ctx, o.key(ns, name), data)
	if err != nil {
		return nil, storageError(err, o.gr, name)
	}
	return o.withRevision(obj, rev)
}

func (o *objectStore) update(ctx context.Context, ns, name string, obj runtime.Object, expected int64) (runtime.Object, error) {
	data, err := o.encode(obj)
	if err != nil {
		return nil, err
	}
	return o.updateEncoded(ctx, ns, name, obj, data, storage.KeyValue{ModRevision: expected})
}

// updaterFrom is a store that takes the value an update replaces from the
// caller instead of reading it again (the embedded store).
type updaterFrom interface {
	UpdateFrom(ctx context.Context, key string, value []byte, prev storage.KeyValue) (int64, error)
}

// updateEncoded is update with obj already encoded (data); prev is the
// stored value it replaces (its ModRevision is the compare-and-swap's
// expected revision; its Value, when set, spares the store a read).
func (o *objectStore) updateEncoded(ctx context.Context, ns, name string, obj runtime.Object, data []byte, prev storage.KeyValue) (runtime.Object, error) {
	defer o.metrics.observeStorage("update", o.gr.String(), time.Now())
	key := o.key(ns, name)
	var rev int64
	var err error
	if u, ok := o.store.(updaterFrom); ok && prev.Value != nil {
		prev.Key = key
		rev, err = u.UpdateFrom(ctx, key, data, prev)
	} else {
		rev, err = o.store.Update(ctx, key, data, prev.ModRevision)
	}
	if err != nil {
		return nil, storageError(err, o.gr, name)
	}
	return o.withRevision(obj, rev)
}

func (o *objectStore) delete(ctx context.Context, ns, name string, expected int64) error {
	defer o.metrics.observeStorage("delete", o.gr.String(), time.Now())
	_, _, err := o.store.Delete(ctx, o.key(ns, name), expected)
	if err != nil {
		return storageError(err, o.gr, name)
	}
	return nil
}

func (o *objectStore) withRevision(obj runtime.Object, rev int64) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	obj.GetObjectKind().SetGroupVersionKind(o.gvk)
	return obj, nil
}
