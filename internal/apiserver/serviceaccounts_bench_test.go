package apiserver

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkPodCreateServiceAccountAdmission is BenchmarkPodCreate with the
// ServiceAccount admission plugin in the chain (its account lookups and
// the token volume): the difference is the plugin's cost per pod create.
func BenchmarkPodCreateServiceAccountAdmission(b *testing.B) {
	signer, _ := testSigner(b, "https://kubernetes.default.svc.cluster.local")
	e := newEnv(b, withConfig(func(c *Config) { c.ServiceAccounts = &ServiceAccountConfig{Signer: signer} }))
	ctx := context.Background()
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pods := e.proto.CoreV1().Pods("default")
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if _, err := pods.Create(ctx, benchPod(i), metav1.CreateOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
