package apiserver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server's hottest requests through HTTP and a protobuf client-go
// clientset, client and server in this process: a node's Lease renewal, a
// pod create, a kubelet's list of its pods. `myriad bench api` measures
// them against a separate server at scale; these are for profiling the
// handlers (-cpuprofile, -memprofile) and watching their allocations.

func BenchmarkLeaseRenewal(b *testing.B) {
	e := newEnv(b)
	e.createNamespace(corev1.NamespaceNodeLease)
	ctx := context.Background()
	leases := e.proto.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	const n = 64
	cur := make([]*coordv1.Lease, n)
	for i := range cur {
		holder, secs := fmt.Sprintf("node-%d", i), int32(40)
		l, err := leases.Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: holder},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cur[i] = l
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(n / 2) // 2 cores: n renewers, one Lease each
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		l := cur[int(next.Add(1)-1)%n]
		for pb.Next() {
			now := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &now
			var err error
			if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkPodCreate(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
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

// benchPod is the kind of pod `myriad bench api` creates.
func benchPod(i int64) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i%200)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("bench-%08d", i),
			Labels:          map[string]string{"app": app, "pod-template-hash": "5d4f8c9b7", "tier": "backend"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d4f8c9b7", UID: "11111111-2222-3333-4444-555555555555"}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%1000),
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/team/" + app + ":v1.2.3",
				Args:  []string{"--port=8080", "--log-level=info"},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
			}},
		},
	}
}

// BenchmarkListPodsByNode lists the 20 pods of one node among 2,000, as a
// kubelet's re-list does: the watch cache's node index, stored protobuf
// passed through.
func BenchmarkListPodsByNode(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	pods := e.proto.CoreV1().Pods("default")
	const nodes, perNode = 100, 20
	for i := range int64(nodes * perNode) {
		p := benchPod(i)
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%nodes)
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			node := fmt.Sprintf("node-%d", next.Add(1)%nodes)
			l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
			if err != nil {
				b.Error(err)
				return
			}
			if len(l.Items) != perNode {
				b.Errorf("%d pods on %s, want %d", len(l.Items), node, perNode)
				return
			}
		}
	})
}
