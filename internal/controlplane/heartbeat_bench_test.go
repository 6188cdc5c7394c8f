package controlplane

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/apiserver/authnconfig"
	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
)

// BenchmarkHeartbeat is what one kubelet heartbeat costs the whole API
// server: TLS on a kept-alive HTTP/1.1 connection (as the hollow nodes
// send them), the filter chain with the node authenticated by its own
// bearer token, API Priority and Fairness, the Node authorizer and RBAC,
// NodeRestriction and the rest of admission, managedFields, the store,
// and the watch fan-out to one Lease and one Node watcher (the node
// lifecycle controller's and the scheduler's). Client and server share
// the process, so ns/op and allocs include client-go's side; compare
// runs, not absolute figures.
//
//   - lease: a renewal, an update of the node's Lease that moves only
//     spec.renewTime (the kubelet every 10 s);
//   - node-status-patch: the kubelet's strategic merge patch of its Node
//     status moving the conditions' lastHeartbeatTime (every 60 s in the
//     simulator, on change or every 5 min in today's kubelet).
func BenchmarkHeartbeat(b *testing.B) {
	const nodes = 32
	dir := b.TempDir()
	names := make([]string, nodes)
	var tokens strings.Builder
	for i := range names {
		names[i] = fmt.Sprintf("hb-node-%d", i)
		fmt.Fprintf(&tokens, "token-%d,system:node:%s,uid-%d,system:nodes\n", i, names[i], i)
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	cfg := Config{
		DataDir: filepath.Join(dir, "data"), SecurePort: benchPort(b),
		Authentication: authnconfig.Options{TokenAuthFile: tokenFile},
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	go func() { done <- Run(ctx, cfg, ready) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		b.Fatal(err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigPath())
	if err != nil {
		b.Fatal(err)
	}
	admin.QPS = -1
	adminCS := kubernetes.NewForConfigOrDie(admin)
	if _, err := adminCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}

	// The watchers: every heartbeat is delivered, as to the controllers.
	leaseWatch, err := adminCS.CoordinationV1().Leases(corev1.NamespaceNodeLease).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	nodeWatch, err := adminCS.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(leaseWatch.Stop)
	b.Cleanup(nodeWatch.Stop)
	go func() {
		for range leaseWatch.ResultChan() {
		}
	}()
	go func() {
		for range nodeWatch.ResultChan() {
		}
	}()

	// Each node registers itself and its Lease, as a kubelet does.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	type node struct {
		name  string
		cs    kubernetes.Interface
		lease *coordv1.Lease
		beat  time.Time
	}
	hb := make([]*node, nodes)
	for i, name := range names {
		nc := rest.CopyConfig(admin)
		nc.BearerToken, nc.BearerTokenFile = fmt.Sprintf("token-%d", i), ""
		nc.ContentType = "application/vnd.kubernetes.protobuf"
		nc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		nc.UserAgent = "kubelet/v1.34.4 (linux/amd64) kubernetes/hollow"
		nc.NextProtos = []string{"http/1.1"}
		cs := kubernetes.NewForConfigOrDie(nc)
		st := corev1.NodeStatus{
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}, {Type: corev1.NodeHostName, Address: name}},
		}
		for _, c := range heartbeatConditions {
			st.Conditions = append(st.Conditions, corev1.NodeCondition{Type: c.typ, Status: c.status, Reason: c.reason, Message: c.reason,
				LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)})
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}},
			Status:     st,
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		holder, secs, now := name, int32(40), metav1.NewMicroTime(t0)
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		hb[i] = &node{name: name, cs: cs, lease: l, beat: t0}
	}
	var next atomic.Int64
	take := func() *node { return hb[int(next.Add(1)-1)%nodes] }

	b.Run("lease", func(b *testing.B) {
		next.Store(0)
		b.ReportAllocs()
		b.SetParallelism(nodes / 2)
		defer benchutil.ReportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			n := take()
			leases := n.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
			for pb.Next() {
				l := n.lease.DeepCopy()
				rt := metav1.NewMicroTime(l.Spec.RenewTime.Add(10 * time.Second))
				l.Spec.RenewTime = &rt
				out, err := leases.Update(ctx, l, metav1.UpdateOptions{})
				if err != nil {
					b.Error(err)
					return
				}
				n.lease = out
			}
		})
	})
	b.Run("node-status-patch", func(b *testing.B) {
		next.Store(0)
		b.ReportAllocs()
		b.SetParallelism(nodes / 2)
		defer benchutil.ReportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			n := take()
			for pb.Next() {
				n.beat = n.beat.Add(time.Minute)
				if _, err := n.cs.CoreV1().Nodes().Patch(ctx, n.name, types.StrategicMergePatchType, statusHeartbeatPatch(n.beat), metav1.PatchOptions{}, "status"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

var heartbeatConditions = []struct {
	typ    corev1.NodeConditionType
	status corev1.ConditionStatus
	reason string
}{
	{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"},
	{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"},
	{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"},
	{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"},
}

// statusHeartbeatPatch is the patch upstream's kubelet sends when nothing
// but the heartbeat changed (its nodestatus.PatchNodeStatus of the
// conditions' lastHeartbeatTime).
func statusHeartbeatPatch(at time.Time) []byte {
	ts := at.UTC().Format(time.RFC3339)
	var order, conds []string
	for _, c := range heartbeatConditions {
		order = append(order, fmt.Sprintf(`{"type":%q}`, c.typ))
		conds = append(conds, fmt.Sprintf(`{"lastHeartbeatTime":%q,"type":%q}`, ts, c.typ))
	}
	return []byte(`{"status":{"$setElementOrder/conditions":[` + strings.Join(order, ",") + `],"conditions":[` + strings.Join(conds, ",") + `]}}`)
}

func benchPort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
