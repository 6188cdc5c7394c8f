package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func openTestStore(t testing.TB) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), embedded.Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// faultyStore is a real store whose health check can be made to fail or
// to hang past every deadline, as an unreachable etcd does.
type faultyStore struct {
	storage.Store
	mode atomic.Int32 // 0 healthy, 1 failing, 2 hanging
	// release ends hung checks when the test is over.
	release chan struct{}
}

func (f *faultyStore) Health(ctx context.Context) error {
	switch f.mode.Load() {
	case 1:
		return errors.New("etcdserver: no leader")
	case 2:
		<-f.release // ignores ctx: the server must bound the probe itself
		return errors.New("released")
	}
	return f.Store.Health(ctx)
}

// TestShardsRouteResources: with pods on a shard of their own, pod writes
// land in that store only, everything else in the default store, each
// resource's resourceVersions are its own store's revisions, and
// /readyz, /livez and componentstatuses report each shard by name.
func TestShardsRouteResources(t *testing.T) {
	podStore := &faultyStore{Store: openTestStore(t), release: make(chan struct{})}
	defer close(podStore.release)
	e := newEnv(t, withConfig(func(c *Config) {
		c.Shards = []StoreShard{{Store: podStore, Resources: []schema.GroupResource{podsGR}}}
	}))
	ctx := context.Background()
	pod, err := e.cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inStore := func(st storage.Store, prefix string) int {
		kvs, _, err := st.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return len(kvs)
	}
	for _, c := range []struct {
		name   string
		st     storage.Store
		prefix string
		want   int
	}{
		{"pods in the pod shard", podStore, "/core/pods/", 1},
		{"pods in the default store", e.store, "/core/pods/", 0},
		{"configmaps in the default store", e.store, "/core/configmaps/", 1},
		{"configmaps in the pod shard", podStore, "/core/configmaps/", 0},
	} {
		if got := inStore(c.st, c.prefix); got != c.want {
			t.Errorf("%s: %d keys, want %d", c.name, got, c.want)
		}
	}
	podRev, _ := podStore.CurrentRevision(ctx)
	if pod.ResourceVersion != fmt.Sprint(podRev) {
		t.Errorf("pod resourceVersion %s, want the pod shard's revision %d", pod.ResourceVersion, podRev)
	}
	defRev, _ := e.store.CurrentRevision(ctx)
	if cm.ResourceVersion != fmt.Sprint(defRev) {
		t.Errorf("configmap resourceVersion %s, want the default store's revision %d", cm.ResourceVersion, defRev)
	}
	// A consistent list of pods waits on the pod shard's revision, not
	// the default store's (which is far ahead after bootstrap).
	list, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion != fmt.Sprint(podRev) {
		t.Fatalf("consistent pod list: %v items, rv %s, err %v; want 1 at %d", len(list.Items), list.ResourceVersion, err, podRev)
	}

	cs, err := e.cs.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs.Items {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "etcd-0,etcd-1") {
		t.Fatalf("componentstatuses %s, want etcd-0 and etcd-1", got)
	}

	for _, c := range []struct {
		mode     int32
		path     string
		code     int
		contains []string
	}{
		{0, "/readyz", 200, []string{"ok"}},
		{1, "/readyz", 500, []string{"[-]etcd-readiness failed: etcd-1 (pods): etcdserver: no leader", "readyz check failed"}},
		{1, "/livez", 500, []string{"[-]etcd failed: etcd-1 (pods)"}},
		{2, "/readyz", 500, []string{"[-]etcd-readiness failed: etcd-1 (pods): no answer within 2s"}},
		{0, "/livez", 200, []string{"ok"}},
	} {
		podStore.mode.Store(c.mode)
		start := time.Now()
		r := e.do("GET", c.path, nil)
		if r.code != c.code {
			t.Fatalf("mode %d %s = %d %s, want %d", c.mode, c.path, r.code, r.body, c.code)
		}
		for _, s := range c.contains {
			if !strings.Contains(string(r.body), s) {
				t.Fatalf("mode %d %s = %q, want it to contain %q", c.mode, c.path, r.body, s)
			}
		}
		if d := time.Since(start); d > 2*shardHealthTimeout {
			t.Fatalf("mode %d %s took %s", c.mode, c.path, d)
		}
	}
}

// TestShardsBadConfig: a resource given to two shards, or a shard
// without a store, is refused at New.
func TestShardsBadConfig(t *testing.T) {
	st := openTestStore(t)
	for name, shards := range map[string][]StoreShard{
		"twice":    {{Store: st, Resources: []schema.GroupResource{podsGR}}, {Store: st, Resources: []schema.GroupResource{podsGR}}},
		"no store": {{Name: "x", Resources: []schema.GroupResource{podsGR}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(Config{Store: st, Shards: shards, Logger: quietLogger()}); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}

// swapHandler serves whichever handler was set last.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }
func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// TestShardRevisionTrap is the Ant seed's trap: pods move from the
// default store to a new shard whose revisions are far lower than the
// resourceVersions clients hold. A watch or list from such a
// resourceVersion must answer 410 at once (never hang), and a client-go
// informer that was watching pods before the move relists and ends up
// with the new shard's pods.
func TestShardRevisionTrap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	oldStore := openTestStore(t)
	// Push the old store's revision well past anything the new shard
	// will reach in this test.
	for i := range 200 {
		if _, err := oldStore.Create(ctx, fmt.Sprintf("/registry/myriad-test/%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	start := func(cfg Config) *Server {
		cfg.Logger = quietLogger()
		api, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := api.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.Stop)
		waitFor(t, 30*time.Second, "caches ready", api.Ready)
		return api
	}
	before := start(Config{Store: oldStore})
	sw := &swapHandler{}
	sw.set(before)
	srv := httptest.NewServer(sw)
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: -1})
	newPod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	old, err := cs.CoreV1().Pods("default").Create(ctx, newPod("before-move"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods().Informer()
	informerCtx, stopInformer := context.WithCancel(ctx)
	factory.Start(informerCtx.Done())
	defer func() {
		stopInformer()
		factory.Shutdown()
	}()
	if !toolscache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		t.Fatal("informer never synced")
	}
	names := func() string {
		var out []string
		for _, o := range pods.GetStore().List() {
			out = append(out, o.(*corev1.Pod).Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(); got != "before-move" {
		t.Fatalf("informer holds %q before the move", got)
	}

	// The move: pods now live in a fresh shard (the operator copied
	// nothing, as happens when events or leases are split off).
	newShard := openTestStore(t)
	after := start(Config{Store: oldStore, Shards: []StoreShard{{Store: newShard, Resources: []schema.GroupResource{podsGR}}}})
	sw.set(after)
	srv.CloseClientConnections() // ends the informer's watch on the old server
	moved, err := cs.CoreV1().Pods("default").Create(ctx, newPod("after-move"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldRV, newRV := parseRV(t, old.ResourceVersion), parseRV(t, moved.ResourceVersion)
	if newRV >= oldRV {
		t.Fatalf("the new shard's revision %d is not below the old %d: the test proves nothing", newRV, oldRV)
	}

	// Raw requests from the old resourceVersion: 410 at once, never a
	// wait (the cache's bounded wait for a future revision is 3 s).
	for _, c := range []struct{ name, path string }{
		{"watch", "/api/v1/namespaces/default/pods?watch=1&resourceVersion=" + old.ResourceVersion},
		{"list", "/api/v1/namespaces/default/pods?resourceVersion=" + old.ResourceVersion},
		{"exact list", "/api/v1/namespaces/default/pods?resourceVersionMatch=Exact&resourceVersion=" + old.ResourceVersion},
		{"get", "/api/v1/namespaces/default/pods/after-move?resourceVersion=" + old.ResourceVersion},
	} {
		t0 := time.Now()
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusGone {
			t.Errorf("%s from the old resourceVersion: %d, want 410", c.name, resp.StatusCode)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("%s from the old resourceVersion took %s", c.name, d)
		}
	}
	// Through client-go, the watch's 410 is an Expired error.
	if _, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("client-go watch from the old resourceVersion: %v, want Expired", err)
	}

	// The informer recovers: it relists and holds only the new shard's pod.
	waitFor(t, 30*time.Second, "the informer to relist from the new shard", func() bool { return names() == "after-move" })
}

func parseRV(t *testing.T, rv string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// TestStorageMetrics: object counts, cache revisions and lag per
// resource, each against its own shard.
func TestStorageMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	podStore := openTestStore(t)
	e := newEnv(t, withConfig(func(c *Config) {
		c.Metrics = reg
		c.Shards = []StoreShard{{Store: podStore, Resources: []schema.GroupResource{podsGR}}}
	}))
	ctx := context.Background()
	var last *corev1.Pod
	for i := range 3 {
		p, err := e.cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = p
	}
	// A consistent read makes the cache current.
	if _, err := e.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		next:
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
						continue next
					}
				}
				return m.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"apiserver_storage_objects", map[string]string{"resource": "pods"}, 3},
		{"apiserver_resource_objects", map[string]string{"group": "", "resource": "pods"}, 3},
		{"apiserver_storage_objects", map[string]string{"resource": "namespaces"}, -1}, // bootstrap's: at least default
		{"apiserver_watch_cache_resource_version", map[string]string{"resource": "pods"}, float64(parseRV(t, last.ResourceVersion))},
		{"myriad_watch_cache_lag_revisions", map[string]string{"resource": "pods"}, 0},
	} {
		got, ok := value(c.name, c.labels)
		if !ok || (c.want >= 0 && got != c.want) || (c.want < 0 && got < 1) {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := value("myriad_watch_cache_lag_revisions", map[string]string{"resource": "configmaps"}); !ok {
		t.Error("no lag reported for configmaps (default shard)")
	}
}
