package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/protoprune"
)

// TestInProcessInformer feeds a client-go informer from the watch cache and
// sees creates, updates and deletes made over HTTP.
func TestInProcessInformer(t *testing.T) {
	e := newEnv(t)
	lw, err := e.api.ListerWatcher(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf := toolscache.NewSharedIndexInformer(lw, &rbacv1.ClusterRole{}, 0, toolscache.Indexers{})
	go inf.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	roles := e.cs.RbacV1().ClusterRoles()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "inprocess"}}
	if _, err := roles.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "informer sees the create", func() bool {
		_, ok, _ := inf.GetStore().GetByKey("inprocess")
		return ok
	})
	if err := roles.Delete(ctx, "inprocess", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "informer sees the delete", func() bool {
		_, ok, _ := inf.GetStore().GetByKey("inprocess")
		return !ok
	})

	if _, err := e.api.ListerWatcher(schema.GroupVersionResource{Version: "v1", Resource: "nonesuch"}); err == nil {
		t.Error("ListerWatcher of an unserved resource: want an error")
	}
}

func TestReadinessCheck(t *testing.T) {
	e := newEnv(t)
	var ok atomic.Bool
	e.api.AddReadinessCheck("test-index", ok.Load)
	if e.api.Ready() {
		t.Fatal("Ready with a failing check")
	}
	r := e.do("GET", "/readyz", nil)
	if r.code != 500 {
		t.Fatalf("/readyz = %d %s, want 500", r.code, r.body)
	}
	ok.Store(true)
	if !e.api.Ready() {
		t.Fatal("not Ready once the check passes")
	}
}

func TestGetObject(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := e.api.GetObject(ctx, gvr, "", "default", ""); err != nil {
		t.Fatalf("GetObject(default namespace): %v", err)
	}
	if _, err := e.api.GetObject(ctx, gvr, "", "nonesuch", ""); err == nil {
		t.Fatal("GetObject(missing): want NotFound")
	}
}

// A pruned lister-watcher's lists leave out what its skip names and
// managedFields, as of the right resourceVersion and in one answer
// whatever the limit; its watch events are whole objects.
func TestPrunedListerWatcher(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := e.cs.CoreV1().Pods("default")
	for _, name := range []string{"a", "b", "c"} {
		if _, err := pods.Create(ctx, testPod(name, "n1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	skip := protoprune.Fields{1: {11: nil}, 2: {2: nil}} // labels, containers
	lw, err := e.api.PrunedListerWatcher(gvr, skip)
	if err != nil {
		t.Fatal(err)
	}
	if skip[1][17] != nil || len(skip[1]) != 1 {
		t.Errorf("PrunedListerWatcher changed its caller's skip: %v", skip)
	}

	obj, err := lw.List(metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	l := obj.(*metainternalversion.List)
	if len(l.Items) != 3 || l.Continue != "" {
		t.Fatalf("listed %d pods (continue %q) with a limit of 2, want all 3 in one answer", len(l.Items), l.Continue)
	}
	if rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64); rv == 0 {
		t.Errorf("list resourceVersion %q, want the cache's revision", l.ResourceVersion)
	}
	for _, obj := range l.Items {
		p := obj.(*corev1.Pod)
		whole, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Labels != nil || p.ManagedFields != nil || p.Spec.Containers != nil {
			t.Errorf("pod %s listed with pruned fields: labels %v, managedFields %d, containers %v", p.Name, p.Labels, len(p.ManagedFields), p.Spec.Containers)
		}
		if p.ResourceVersion != whole.ResourceVersion || p.UID != whole.UID || p.Spec.NodeName != "n1" {
			t.Errorf("pod %s listed as %s/%s on %q, want %s/%s on n1", p.Name, p.UID, p.ResourceVersion, p.Spec.NodeName, whole.UID, whole.ResourceVersion)
		}
	}

	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, toolscache.Indexers{})
	go inf.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if _, err := pods.Create(ctx, testPod("d", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "informer sees the create, whole", func() bool {
		obj, ok, _ := inf.GetStore().GetByKey("default/d")
		return ok && obj.(*corev1.Pod).Labels["app"] == "test"
	})
	got, _, _ := inf.GetStore().GetByKey("default/a")
	if p, ok := got.(*corev1.Pod); !ok || p.Labels != nil {
		t.Errorf("informer's listed pod a = %+v, want it pruned", got)
	}

	if _, err := e.api.PrunedListerWatcher(gvr, protoprune.Fields{1: nil}); err == nil {
		t.Error("PrunedListerWatcher without metadata: want an error")
	}
}

// A pruned list longer than one decoding chunk comes back whole, in key
// order and pruned, however its chunks were spread over the cores.
func TestPrunedListAcrossChunks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods("default")
	const n = 3*256 + 1
	for i := range n {
		if _, err := pods.Create(ctx, testPod(fmt.Sprintf("p%04d", i), "n1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lw, err := e.api.PrunedListerWatcher(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, protoprune.Fields{1: {11: nil}})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := obj.(*metainternalversion.List).Items
	if len(items) != n {
		t.Fatalf("listed %d pods, want %d", len(items), n)
	}
	for i, obj := range items {
		p := obj.(*corev1.Pod)
		if want := fmt.Sprintf("p%04d", i); p.Name != want || p.Labels != nil || p.Spec.NodeName != "n1" {
			t.Fatalf("item %d: %s with labels %v on %q, want %s without labels on n1", i, p.Name, p.Labels, p.Spec.NodeName, want)
		}
	}
}

// TestInProcessWatchQueue: an in-process watch holds a burst many times
// its cache channel for a consumer that is not reading, and hands it on in
// order; past its queue's bound it ends, as a cache watcher that fell
// behind does, and the consumer watches again.
func TestInProcessWatchQueue(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	lw, err := e.api.ListerWatcher(gvr)
	if err != nil {
		t.Fatal(err)
	}
	list, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := list.(*corev1.ConfigMapList).ResourceVersion

	w, err := lw.Watch(metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	burst := 2*inProcessCacheBuffer + 10
	for i := range burst {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d", i), Namespace: "default"}}
		if _, err := e.api.Objects().Create(ctx, gvr, cm); err != nil {
			t.Fatal(err)
		}
	}
	for i := range burst {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %d of %d events", i, burst)
			}
			cm, _ := ev.Object.(*corev1.ConfigMap)
			if want := fmt.Sprintf("burst-%d", i); ev.Type != "ADDED" || cm == nil || cm.Name != want {
				t.Fatalf("event %d: %s %#v, want ADDED %s", i, ev.Type, ev.Object, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d of %d did not come", i, burst)
		}
	}

	limited := &cacheListerWatcher{h: lw.(*cacheListerWatcher).h, queueLimit: 10}
	lagging, err := limited.Watch(metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer lagging.Stop()
	// The watch replays the burst since rv, faster than one event at a
	// time is taken: its queue passes the bound and it ends. Without the
	// bound it would hand on the whole burst and stay open.
	got := 0
	for {
		select {
		case ev, ok := <-lagging.ResultChan():
			if !ok {
				if got >= burst {
					t.Errorf("the watch ended after handing on all %d events", got)
				}
				return
			}
			if ev.Type != "ADDED" {
				// A 410 would end the watch too, for another reason.
				t.Fatalf("event %d: %s %#v, want ADDED", got, ev.Type, ev.Object)
			}
			got++
		case <-time.After(10 * time.Second):
			t.Fatalf("a watch %d events behind was not ended (%d taken)", burst, got)
		}
	}
}
