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
