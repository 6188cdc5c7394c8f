package sim

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	typeddiscoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
)

// The simulator's dry-run proxies each hold their own watches, as real
// kube-proxies do: that watch load on the control plane is what they are
// there to produce. But a real kube-proxy decodes an event on its own
// node's CPU, and the simulator's 10,000 proxies share one process: when a
// 200-endpoint EndpointSlice changes, 10,000 watches deliver the same bytes
// and decoding them 10,000 times (~50 KB of protobuf each) saturated the
// simulator long before the control plane (docs/bench/proxy.md), and
// 10,000 decoded copies in 10,000 informers took ~4 MiB per proxy.
//
// So the proxies' clients decode through a decodeCache: a watch event's
// object bytes are decoded once, and every watch that receives identical
// bytes gets the same object. Identical bytes decode to identical objects
// (the serializer is deterministic and converts nothing), and the informers
// and proxiers only read what they are given, so sharing is safe. The cache
// holds its objects weakly: an entry lives as long as some informer holds
// the object, and goes when the last one replaces it.

// decodeCache maps an object's encoded bytes to the object they decoded to.
type decodeCache struct {
	mu      sync.Mutex
	entries map[string]*decodeEntry
	// decodes counts the objects decoded; shared the decodes saved.
	decodes, shared atomic.Uint64
}

// decodeEntry is one decoding, possibly in progress: done closes when it has
// finished, after which the other fields are read-only.
type decodeEntry struct {
	done chan struct{}
	// ref returns the decoded object while something else holds it; nil
	// for types the cache does not share (then obj holds the result for
	// the callers that waited, and the entry has left the map).
	ref func() k8sruntime.Object
	obj k8sruntime.Object
	gvk schema.GroupVersionKind
	err error
}

func newDecodeCache() *decodeCache {
	return &decodeCache{entries: map[string]*decodeEntry{}}
}

// decode returns what inner decodes data to, decoding each distinct data
// once while its object is alive. Concurrent callers with the same data
// wait for one decoding rather than each doing it.
func (c *decodeCache) decode(inner k8sruntime.Decoder, data []byte) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	for {
		c.mu.Lock()
		e, ok := c.entries[string(data)]
		if !ok {
			key := string(data)
			e = &decodeEntry{done: make(chan struct{})}
			c.entries[key] = e
			c.mu.Unlock()
			return c.fill(inner, data, key, e)
		}
		c.mu.Unlock()
		<-e.done
		if e.err != nil {
			return nil, nil, e.err
		}
		obj := e.obj
		if e.ref != nil {
			obj = e.ref()
		}
		if obj != nil {
			c.shared.Add(1)
			gvk := e.gvk
			return obj, &gvk, nil
		}
		// Collected, its cleanup not run yet: forget it and decode anew.
		c.mu.Lock()
		if c.entries[string(data)] == e {
			delete(c.entries, string(data))
		}
		c.mu.Unlock()
	}
}

// fill decodes data into e, which the caller has put in the map at key.
func (c *decodeCache) fill(inner k8sruntime.Decoder, data []byte, key string, e *decodeEntry) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	c.decodes.Add(1)
	obj, gvk, err := inner.Decode(data, nil, nil)
	forget := func() {
		c.mu.Lock()
		if c.entries[key] == e {
			delete(c.entries, key)
		}
		c.mu.Unlock()
	}
	switch {
	case err != nil:
		e.err = err
		forget() // a later, identical frame tries again
	default:
		if gvk != nil {
			e.gvk = *gvk
		}
		switch o := obj.(type) {
		case *discoveryv1.EndpointSlice:
			e.ref = weakRef(o, forget)
		case *corev1.Service:
			e.ref = weakRef(o, forget)
		case *corev1.Node:
			e.ref = weakRef(o, forget)
		default:
			// Anything else a proxy watches is rare (a Status on an
			// expired watch): hand it to the waiters only.
			e.obj = obj
			forget()
		}
	}
	close(e.done)
	return obj, gvk, err
}

// weakRef returns a function returning p while it is reachable from
// elsewhere, and arranges for gone to run once it is not.
func weakRef[T any, PT interface {
	*T
	k8sruntime.Object
}](p PT, gone func()) func() k8sruntime.Object {
	w := weak.Make((*T)(p))
	runtime.AddCleanup((*T)(p), func(f func()) { f() }, gone)
	return func() k8sruntime.Object {
		if v := w.Value(); v != nil {
			return PT(v)
		}
		return nil
	}
}

// sharingSerializer is the generated clients' serializer, except that the
// decoders it hands out for responses nobody decodes into (watch events)
// go through a decodeCache.
type sharingSerializer struct {
	k8sruntime.NegotiatedSerializer
	cache *decodeCache
}

// SupportedMediaTypes hands out the protobuf watch stream's envelope
// decoder as an envelopeDecoder.
func (s sharingSerializer) SupportedMediaTypes() []k8sruntime.SerializerInfo {
	infos := slices.Clone(s.NegotiatedSerializer.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType == k8sruntime.ContentTypeProtobuf && info.StreamSerializer != nil {
			stream := *info.StreamSerializer
			stream.Serializer = envelopeDecoder{stream.Serializer}
			infos[i].StreamSerializer = &stream
		}
	}
	return infos
}

func (s sharingSerializer) DecoderToVersion(d k8sruntime.Decoder, gv k8sruntime.GroupVersioner) k8sruntime.Decoder {
	return sharingDecoder{inner: s.NegotiatedSerializer.DecoderToVersion(d, gv), cache: s.cache}
}

type sharingDecoder struct {
	inner k8sruntime.Decoder
	cache *decodeCache
}

// Decode shares only what is decoded into a new object with no defaults:
// client-go decodes watch events so. A caller passing into (a list, a get)
// owns the result and may change it.
func (d sharingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into k8sruntime.Object) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	if defaults != nil || into != nil {
		return d.inner.Decode(data, defaults, into)
	}
	return d.cache.decode(d.inner, data)
}

// proxyClient is a clientset whose core and discovery clients decode watch
// events through a shared decodeCache; the rest is the simulator's.
type proxyClient struct {
	kubernetes.Interface
	core      typedcorev1.CoreV1Interface
	discovery typeddiscoveryv1.DiscoveryV1Interface
}

func (c proxyClient) CoreV1() typedcorev1.CoreV1Interface { return c.core }

func (c proxyClient) DiscoveryV1() typeddiscoveryv1.DiscoveryV1Interface { return c.discovery }

// newProxyClient builds the proxies' clientset over rc and hc (the
// simulator's connections), decoding watch events through cache.
func newProxyClient(rc *rest.Config, hc *http.Client, base kubernetes.Interface, cache *decodeCache) (kubernetes.Interface, error) {
	ns := sharingSerializer{
		NegotiatedSerializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(),
		cache:                cache,
	}
	restClient := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &gv, apiPath, ns
		client, err := rest.RESTClientForConfigAndClient(c, hc)
		if err != nil {
			return nil, fmt.Errorf("sim: building the proxies' %s client: %w", gv, err)
		}
		return client, nil
	}
	core, err := restClient(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	disc, err := restClient(discoveryv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return proxyClient{Interface: base, core: typedcorev1.New(core), discovery: typeddiscoveryv1.New(disc)}, nil
}
