package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestConcurrentWrites: unconditional patches racing on one object all
// land (the compare-and-swap loop retries), and concurrent Service creates
// never share a ClusterIP or NodePort.
func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, testConfigMap("hot", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				p := fmt.Sprintf(`{"metadata":{"labels":{"w%d-%d":"x"}}}`, w, i)
				if _, err := cms.Patch(ctx, "hot", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
					errs <- fmt.Errorf("patch w%d-%d: %w", w, i, err)
				}
			}
		})
		wg.Go(func() {
			for i := 0; i < each; i++ {
				svc := testService(fmt.Sprintf("svc-%d-%d", w, i), corev1.ServiceTypeNodePort, 0)
				if _, err := e.cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("service %s: %w", svc.Name, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := cms.Get(ctx, "hot", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Labels) != writers*each {
		t.Fatalf("%d of %d concurrent patches landed", len(got.Labels), writers*each)
	}
	svcs, err := e.cs.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range svcs.Items {
		if other, dup := ips[s.Spec.ClusterIP]; dup {
			t.Errorf("%s and %s share ClusterIP %s", s.Name, other, s.Spec.ClusterIP)
		}
		ips[s.Spec.ClusterIP] = s.Name
		for _, p := range s.Spec.Ports {
			if other, dup := ports[p.NodePort]; dup {
				t.Errorf("%s and %s share nodePort %d", s.Name, other, p.NodePort)
			}
			ports[p.NodePort] = s.Name
		}
	}
	if len(svcs.Items) != writers*each {
		t.Fatalf("%d services, want %d", len(svcs.Items), writers*each)
	}
}

// TestUpdatesWhenCacheIsBehind: updates start from the watch cache's copy,
// which can be behind the store. Here a second API server over the same
// store writes and the first is asked right after, before its cache may
// have seen the write: an update pinned to the revision just written must
// succeed, a patch must apply to the newest version, and a no-op must
// answer with the stored revision — never a spurious 409 or a lost write.
func TestUpdatesWhenCacheIsBehind(t *testing.T) {
	e := newEnv(t)
	a := e.cs.CoreV1().ConfigMaps("default")
	e.startServer()
	b := e.cs.CoreV1().ConfigMaps("default")
	ctx := context.Background()
	cur, err := a.Create(ctx, testConfigMap("hot", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		// b writes; a updates pinned to b's revision.
		cur.Data = map[string]string{"by": "b", "i": fmt.Sprint(i)}
		if cur, err = b.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("round %d: b update: %v", i, err)
		}
		pinned := cur.DeepCopy()
		pinned.Data["by"] = "a"
		if cur, err = a.Update(ctx, pinned, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("round %d: a update pinned to b's revision %s: %v", i, pinned.ResourceVersion, err)
		}
		// b again: a no-op against the newest version.
		same, err := b.Update(ctx, cur.DeepCopy(), metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("round %d: b no-op update: %v", i, err)
		}
		if same.ResourceVersion != cur.ResourceVersion {
			t.Fatalf("round %d: no-op update answered revision %s, stored is %s", i, same.ResourceVersion, cur.ResourceVersion)
		}
		// A patch through a right after one through b: both land.
		if _, err := b.Patch(ctx, "hot", types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"pb":"%d"}}`, i)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if cur, err = a.Patch(ctx, "hot", types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"pa":"%d"}}`, i)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(i); cur.Data["pb"] != want || cur.Data["pa"] != want || cur.Data["by"] != "a" {
			t.Fatalf("round %d: after both patches data is %v", i, cur.Data)
		}
	}
}
