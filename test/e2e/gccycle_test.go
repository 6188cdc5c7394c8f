package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestGarbageCollectorOwnershipCycle: three objects owning each other in a
// ring, every reference blocking its owner's deletion; a foreground delete
// of one removes all three (the conformance suite's "should not be blocked
// by dependency circle", with ConfigMaps, which need no node).
func TestGarbageCollectorOwnershipCycle(t *testing.T) {
	const ns = "gc-cycle-e2e"
	c := shared.client(t)
	ctx := context.Background()
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()

	cms := c.CoreV1().ConfigMaps(ns)
	names := []string{"c1", "c2", "c3"}
	uids := map[string]types.UID{}
	for _, n := range names {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[n] = cm.UID
	}
	// c1 is owned by c3, c2 by c1, c3 by c2.
	for i, n := range names {
		owner := names[(i+2)%3]
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner, uids[owner])
		if _, err := cms.Patch(ctx, n, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fg := metav1.DeletePropagationForeground
	uid := uids["c1"]
	if err := cms.Delete(ctx, "c1", metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	var left []string
	waitFor(t, 60*time.Second, func() bool {
		l, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		left = left[:0]
		for _, cm := range l.Items {
			if cm.Name != "kube-root-ca.crt" {
				left = append(left, cm.Name)
			}
		}
		return len(left) == 0
	})
}
