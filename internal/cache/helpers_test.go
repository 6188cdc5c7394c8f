package cache

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

const podPrefix = "/core/pods/"

// podCodec encodes and decodes pods as protobuf with a local scheme, the
// way the API server stores them.
type podCodec struct {
	ser *protobuf.Serializer
}

func newPodCodec(t testing.TB) *podCodec {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return &podCodec{ser: protobuf.NewSerializer(scheme, scheme)}
}

func (pc *podCodec) encode(t testing.TB, p *corev1.Pod) []byte {
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.ResourceVersion = ""
	var buf bytes.Buffer
	if err := pc.ser.Encode(p, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (pc *podCodec) decode(kv storage.KeyValue) (runtime.Object, error) {
	obj, _, err := pc.ser.Decode(kv.Value, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", kv.Key, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

func podAttrs(obj runtime.Object) (labels.Set, fields.Set) {
	p := obj.(*corev1.Pod)
	return p.Labels, fields.Set{
		"metadata.name":      p.Name,
		"metadata.namespace": p.Namespace,
		"spec.nodeName":      p.Spec.NodeName,
		"status.phase":       string(p.Status.Phase),
	}
}

func newPod(ns, name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func podKey(ns, name string) string { return podPrefix + ns + "/" + name }

func openStore(t testing.TB) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(context.Background(), embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// env is a cache over a real embedded store with a fake clock.
type env struct {
	t     testing.TB
	ctx   context.Context
	store *embedded.Store
	codec *podCodec
	clock *testingclock.FakeClock
	c     *Cache
}

func newEnv(t testing.TB, mutate func(*Config)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, store: openStore(t), codec: newPodCodec(t), clock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	return e.startCache(mutate)
}

func (e *env) config(mutate func(*Config)) Config {
	cfg := Config{
		Store:            e.store,
		Prefix:           podPrefix,
		NewFunc:          func() runtime.Object { return &corev1.Pod{} },
		Decode:           e.codec.decode,
		Attrs:            podAttrs,
		IndexedFields:    []string{"spec.nodeName"},
		BookmarkInterval: time.Minute,
		Clock:            e.clock,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

func (e *env) startCache(mutate func(*Config)) *env {
	e.t.Helper()
	e.c = e.newReadyCache(e.config(mutate))
	return e
}

// newReadyCache starts a cache with cfg, stopped at the test's end, and
// waits until it is ready.
func (e *env) newReadyCache(cfg Config) *Cache {
	e.t.Helper()
	c, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := c.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(c.Stop)
	if err := c.WaitReady(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) create(p *corev1.Pod) int64 {
	e.t.Helper()
	rev, err := e.store.Create(e.ctx, podKey(p.Namespace, p.Name), e.codec.encode(e.t, p))
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

// update overwrites the pod whatever its revision.
func (e *env) update(p *corev1.Pod) int64 {
	e.t.Helper()
	key := podKey(p.Namespace, p.Name)
	cur, err := e.store.Get(e.ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	rev, err := e.store.Update(e.ctx, key, e.codec.encode(e.t, p), cur.ModRevision)
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

func (e *env) delete(ns, name string) int64 {
	e.t.Helper()
	_, rev, err := e.store.Delete(e.ctx, podKey(ns, name), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

// writeOther writes outside the cache's prefix: the store's revision moves
// on while the cache hears nothing.
func (e *env) writeOther(name string) int64 {
	e.t.Helper()
	rev, err := e.store.Create(e.ctx, "/core/configmaps/default/"+name, []byte("x"))
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

// waitRev polls until the cache has applied rev (no blind sleeps).
// waitRev waits until the cache is complete up to rev, woken by each
// change of its revision (setRevLocked), not by polling.
func (e *env) waitRev(rev int64) {
	e.t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		e.c.mu.RLock()
		cur, changed := e.c.mu.rev, e.c.mu.revChanged
		e.c.mu.RUnlock()
		if cur >= rev {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			e.t.Fatalf("timed out waiting for cache revision >= %d (have %d)", rev, cur)
		}
	}
}

func waitFor(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		time.Sleep(time.Millisecond)
	}
}

// list returns "ns/name@rv" of every listed pod, and the result.
func (e *env) list(opts ListOptions) ([]string, ListResult, error) {
	var out []string
	res, err := e.c.List(e.ctx, opts, func(obj runtime.Object) error {
		p := obj.(*corev1.Pod)
		out = append(out, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		return nil
	})
	return out, res, err
}

func names(objs []string) []string {
	out := make([]string, len(objs))
	for i, s := range objs {
		out[i] = s[:bytes.IndexByte([]byte(s), '@')]
	}
	return out
}

// next receives one event or fails after a real-time deadline.
func next(t testing.TB, w *Watcher) *Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return nil
}

func describe(ev *Event) string {
	if ev.Type == "BOOKMARK" || ev.Type == "ERROR" {
		return fmt.Sprintf("%s@%d", ev.Type, ev.Revision)
	}
	p := evObj(ev).(*corev1.Pod)
	return fmt.Sprintf("%s %s/%s@%s", ev.Type, p.Namespace, p.Name, p.ResourceVersion)
}

// expectNone checks nothing is queued for w once the cache has applied rev
// (events are dispatched before the revision is observable... after it, so
// the caller orders a marker write instead where it matters).
func expectEmpty(t testing.TB, w *Watcher) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s", describe(ev))
		}
		t.Fatal("watch channel closed unexpectedly")
	default:
	}
}

// evObj is ev's object; a decode failure panics (the tests' values all
// decode).
func evObj(ev *Event) runtime.Object {
	obj, err := ev.Object()
	if err != nil {
		panic(err)
	}
	return obj
}
