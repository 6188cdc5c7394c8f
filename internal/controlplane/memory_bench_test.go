package controlplane

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	schedcache "github.com/myriad-k8s/myriad/internal/scheduler/cache"
)

// BenchmarkPodMemory is the regression benchmark for the per-pod memory
// budget of the in-process components' caches (docs/bench/memory.md). It
// feeds memoryBenchPods copies of a pod as a density run's API served it
// (testdata/density-pod.json: managedFields, status, a Deployment's
// owner) through the caches as watch events, and reports the live heap
// they hold per pod:
//
//   - shared: `myriad up` now: the shared factory's in-process pod
//     informer (one decode, managedFields dropped), with the garbage
//     collector's owner index on it, and the scheduler's cache.
//   - separate: `myriad up` before: the scheduler's own informer (its own
//     decode, managedFields kept), the controllers' typed informer (another
//     decode, trimmed), the collector's metadata-only informer (a third,
//     with the owner index), and the scheduler's cache.
//
// The watch cache's bytes and the store are the API server's and are not
// included (internal/cache and the store have their own benchmarks).
func BenchmarkPodMemory(b *testing.B) {
	raw := memoryBenchPods(b, memoryBenchPods1)
	for _, layout := range []struct {
		name string
		fill func(b *testing.B, raw [][]byte, stop <-chan struct{}) func()
	}{
		{"shared", fillShared},
		{"separate", separate(partScheduler | partControllers | partCollector)},
		// The parts of separate, one at a time.
		{"part=scheduler-informer", separate(partScheduler)},
		{"part=scheduler-informer+cache", separate(partScheduler | partSchedulerCache)},
		{"part=controllers-informer", separate(partControllers)},
		{"part=collector-metadata", separate(partCollector)},
	} {
		b.Run(layout.name, func(b *testing.B) {
			var perPod float64
			for b.Loop() {
				stop := make(chan struct{})
				before := liveHeap()
				done := layout.fill(b, raw, stop)
				perPod = float64(liveHeap()-before) / float64(len(raw))
				close(stop)
				done()
			}
			b.ReportMetric(perPod, "B/pod")
		})
	}
}

// memoryBenchPods1 is the pod count: enough that per-structure overheads
// (maps' buckets, the scheduler's node infos) average out, few enough to
// run in a few seconds.
const memoryBenchPods1 = 10000

// podsPerNode spreads the pods as the density run does (30 per node).
const podsPerNode = 30

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// memoryBenchPods returns n protobuf encodings of the density pod, each
// with its own name, UID and node.
func memoryBenchPods(b *testing.B, n int) [][]byte {
	b.Helper()
	data, err := os.ReadFile("testdata/density-pod.json")
	if err != nil {
		b.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(data, &pod); err != nil {
		b.Fatal(err)
	}
	if len(pod.ManagedFields) == 0 || len(pod.OwnerReferences) == 0 || pod.Spec.NodeName == "" {
		b.Fatal("testdata/density-pod.json is not a bound, owned pod as served")
	}
	out := make([][]byte, n)
	for i := range out {
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("%s-%d", pod.GenerateName, i)
		p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		p.Spec.NodeName = fmt.Sprintf("node-%d", i/podsPerNode)
		if out[i], err = p.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// fillShared builds what `myriad up` holds per pod now and waits until it
// holds every pod.
func fillShared(b *testing.B, raw [][]byte, stop <-chan struct{}) func() {
	src := &benchCaches{pods: newBenchPodSource(raw, decodePod)}
	s, err := newSharedInformers(src, &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	inf := s.factory.Core().V1().Pods().Informer()
	sched := schedcache.New(0)
	addSchedulerAndCollector(b, inf, sched, true)
	s.factory.Start(stop)
	waitFilled(b, stop, len(raw), inf)
	return func() {
		s.stop()
		runtime.KeepAlive(sched)
	}
}

// parts of the layout before the shared factory.
const (
	// partScheduler: the scheduler's own pod informer (its own decode,
	// managedFields kept) with the scheduler's cache fed from it.
	partScheduler = 1 << iota
	// partControllers: the controllers' typed pod informer (another
	// decode, managedFields dropped in place).
	partControllers
	// partCollector: the garbage collector's metadata-only pod informer
	// (a third decode) with its owner index.
	partCollector
	// partSchedulerCache adds the scheduler's cache to partScheduler's
	// informer; partScheduler alone is the informer alone.
	partSchedulerCache
)

// separate builds what `myriad up` held per pod before the shared
// factory, or some of it: an informer per component, each decoding every
// pod itself.
func separate(parts int) func(b *testing.B, raw [][]byte, stop <-chan struct{}) func() {
	if parts&(partScheduler|partControllers|partCollector) == partScheduler|partControllers|partCollector {
		parts |= partSchedulerCache
	}
	return func(b *testing.B, raw [][]byte, stop <-chan struct{}) func() {
		newInformer := func(decode func([]byte) (k8sruntime.Object, error), obj k8sruntime.Object, transform toolscache.TransformFunc) toolscache.SharedIndexInformer {
			inf := toolscache.NewSharedIndexInformer(newBenchPodSource(raw, decode), obj, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
			if transform != nil {
				if err := inf.SetTransform(transform); err != nil {
					b.Fatal(err)
				}
			}
			return inf
		}
		inPlaceTrim := func(obj any) (any, error) {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}
		var infs []toolscache.SharedIndexInformer
		var sched *schedcache.Cache
		if parts&partScheduler != 0 {
			inf := newInformer(decodePod, &corev1.Pod{}, nil)
			if parts&partSchedulerCache != 0 {
				sched = schedcache.New(0)
			}
			addSchedulerAndCollector(b, inf, sched, false)
			infs = append(infs, inf)
		}
		if parts&partControllers != 0 {
			infs = append(infs, newInformer(decodePod, &corev1.Pod{}, inPlaceTrim))
		}
		if parts&partCollector != 0 {
			inf := newInformer(decodeMetadata, &metav1.PartialObjectMetadata{}, inPlaceTrim)
			addSchedulerAndCollector(b, inf, nil, true)
			infs = append(infs, inf)
		}
		for _, inf := range infs {
			go inf.Run(stop)
		}
		waitFilled(b, stop, len(raw), infs...)
		return func() { runtime.KeepAlive(sched) }
	}
}

// addSchedulerAndCollector registers the scheduler cache's handler (when
// sched is not nil) and the garbage collector's owner index (when owners).
func addSchedulerAndCollector(b *testing.B, inf toolscache.SharedIndexInformer, sched *schedcache.Cache, owners bool) {
	if sched != nil {
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { sched.AddPod(obj.(*corev1.Pod)) }}); err != nil {
			b.Fatal(err)
		}
	}
	if owners {
		// The collector's index (garbagecollector.ownerUIDs).
		err := inf.AddIndexers(toolscache.Indexers{"gc-owner-uid": func(obj any) ([]string, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, nil
			}
			var out []string
			for _, r := range m.GetOwnerReferences() {
				out = append(out, string(r.UID))
			}
			return out, nil
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func waitFilled(b *testing.B, stop <-chan struct{}, n int, infs ...toolscache.SharedIndexInformer) {
	for _, inf := range infs {
		if !toolscache.WaitForCacheSync(stop, func() bool { return len(inf.GetStore().ListKeys()) == n }) {
			b.Fatal("informer did not fill")
		}
	}
}

func decodePod(raw []byte) (k8sruntime.Object, error) {
	p := &corev1.Pod{}
	return p, p.Unmarshal(raw)
}

// decodeMetadata decodes a pod's encoding as the metadata-only client
// receives it: the ObjectMeta alone (field 1 in both messages).
func decodeMetadata(raw []byte) (k8sruntime.Object, error) {
	m := &metav1.PartialObjectMetadata{}
	return m, m.Unmarshal(raw)
}

// benchCaches serves the pods through benchPodSource and every other type
// the shared factory reads in-process empty.
type benchCaches struct {
	pods toolscache.ListerWatcher
}

func (c *benchCaches) ListerWatcher(gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error) {
	if gvr.Resource == "pods" {
		return c.pods, nil
	}
	for _, t := range inProcessTypes() {
		if t.gvr == gvr {
			empty := t.obj
			return newBenchPodSource(nil, func([]byte) (k8sruntime.Object, error) { return empty.DeepCopyObject(), nil }), nil
		}
	}
	return nil, fmt.Errorf("%s is not served", gvr)
}

// benchPodSource lists nothing, then delivers every pod as an Added
// event, decoding each as it sends it (as a watch decodes what it
// receives): only what an informer keeps stays on the heap.
type benchPodSource struct {
	raw    [][]byte
	decode func([]byte) (k8sruntime.Object, error)
}

func newBenchPodSource(raw [][]byte, decode func([]byte) (k8sruntime.Object, error)) *benchPodSource {
	return &benchPodSource{raw: raw, decode: decode}
}

func (s *benchPodSource) List(metav1.ListOptions) (k8sruntime.Object, error) {
	// Any list type will do for an empty list with a resourceVersion.
	return &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

// Watch sends every pod, and for a watch-list (the reflector's default)
// then the bookmark that ends the initial events.
func (s *benchPodSource) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	ch := make(chan watch.Event)
	w := watch.NewProxyWatcher(ch)
	send := func(ev watch.Event) bool {
		select {
		case ch <- ev:
			return true
		case <-w.StopChan():
			return false
		}
	}
	go func() {
		defer close(ch) // ends the consumers' loops, as a stopped watch does
		for _, raw := range s.raw {
			obj, err := s.decode(raw)
			if err != nil {
				panic(err)
			}
			if !send(watch.Event{Type: watch.Added, Object: obj}) {
				return
			}
		}
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
			bookmark, _ := s.decode(nil)
			m, err := meta.Accessor(bookmark)
			if err != nil {
				panic(err)
			}
			m.SetResourceVersion("1")
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			if !send(watch.Event{Type: watch.Bookmark, Object: bookmark}) {
				return
			}
		}
		<-w.StopChan()
	}()
	return w, nil
}
