package apiserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
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
