package apiserver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
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

// benchPod is the i-th pod as its ReplicaSet creates it: a
// benchutil.StoredPod without what the server and the kubelet add later.
func benchPod(i int64) *corev1.Pod {
	p := benchutil.StoredPod(int(i), "default", 1000)
	p.UID, p.ManagedFields, p.Status, p.CreationTimestamp = "", nil, corev1.PodStatus{}, metav1.Time{}
	return p
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
