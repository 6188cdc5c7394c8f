package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

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
	defer benchutil.ReportCPU(b)()
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

// BenchmarkNodeStatusPatch is a kubelet's Node status heartbeat: the
// strategic merge patch of nodes/NAME/status that moves the conditions'
// lastHeartbeatTime and nothing else, 64 nodes patched in parallel.
func BenchmarkNodeStatusPatch(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	nodes := e.proto.CoreV1().Nodes()
	const n = 64
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	types := []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady}
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{corev1.LabelHostname: fmt.Sprintf("node-%d", i)}}}
		for _, t := range types {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "Kubelet" + string(t),
				LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)})
		}
		if _, err := nodes.Create(ctx, node, metav1.CreateOptions{FieldManager: "kubelet"}); err != nil {
			b.Fatal(err)
		}
	}
	patch := func(at time.Time) []byte {
		ts := at.UTC().Format(time.RFC3339)
		var order, conds []string
		for _, t := range types {
			order = append(order, fmt.Sprintf(`{"type":%q}`, t))
			conds = append(conds, fmt.Sprintf(`{"lastHeartbeatTime":%q,"type":%q}`, ts, t))
		}
		return []byte(`{"status":{"$setElementOrder/conditions":[` + strings.Join(order, ",") + `],"conditions":[` + strings.Join(conds, ",") + `]}}`)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(n / 2)
	b.ResetTimer()
	defer benchutil.ReportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		name := fmt.Sprintf("node-%d", (next.Add(1)-1)%n)
		at := t0
		for pb.Next() {
			at = at.Add(time.Minute) // a write each time: heartbeat times are whole seconds
			if _, err := nodes.Patch(ctx, name, k8stypes.StrategicMergePatchType, patch(at), metav1.PatchOptions{FieldManager: "kubelet"}, "status"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
