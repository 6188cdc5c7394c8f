package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestConcurrentPatchesAllLand: patches that race on one object are
// re-applied to the newer version, not answered 409, unless the patch
// itself pins a resourceVersion. With 32 released at once, the last to land
// loses dozens of compare-and-swaps first (a retry bound of 16 failed here).
func TestConcurrentPatchesAllLand(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, testConfigMap("raced", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			patch := fmt.Sprintf(`{"metadata":{"labels":{"l%d":"v"}}}`, i)
			pt := types.MergePatchType
			if i%2 == 1 {
				pt = types.StrategicMergePatchType
			}
			if _, err := cms.Patch(ctx, "raced", pt, []byte(patch), metav1.PatchOptions{}); err != nil {
				errs <- err
			}
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent patch failed: %v", err)
	}
	got, err := cms.Get(ctx, "raced", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Labels) != n {
		t.Fatalf("%d labels after %d patches: %v", len(got.Labels), n, got.Labels)
	}
	// A patch that names a stale resourceVersion is an optimistic lock.
	stale := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"labels":{"late":"v"}}}`, cm.ResourceVersion)
	if _, err := cms.Patch(ctx, "raced", types.MergePatchType, []byte(stale), metav1.PatchOptions{}); err == nil {
		t.Fatal("patch pinned to a stale resourceVersion succeeded")
	}
}
