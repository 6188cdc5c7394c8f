package node

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
)

// Scale of the benchmarks: the design's target cluster.
const (
	benchNodes      = 10_000
	benchPods       = 200_000
	benchNamespaces = 100
)

// benchPod is a typical pod: a ServiceAccount, the projected
// kube-api-access volume (kube-root-ca.crt), one Secret volume and one
// ConfigMap env source of its own Deployment-like group.
func benchPod(i int) *corev1.Pod {
	ns := fmt.Sprintf("ns-%d", (i/20)%benchNamespaces) // an app stays in one namespace
	app := fmt.Sprintf("app-%d", i/20)
	return pod(ns, fmt.Sprintf("%s-%d", app, i), fmt.Sprintf("node-%d", i%benchNodes),
		withSecretVolume(app+"-secret"), withConfigMapEnv(app+"-config"),
		func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			}}}})
		})
}

func buildBenchGraph(tb testing.TB, pods []*corev1.Pod) *fixture {
	f := newFixture(tb)
	list := make([]interface{}, len(pods))
	for i, p := range pods {
		list[i] = p
	}
	if err := f.pods.Replace(list, "1"); err != nil {
		tb.Fatal(err)
	}
	return f
}

func benchPods200k() []*corev1.Pod {
	pods := make([]*corev1.Pod, benchPods)
	for i := range pods {
		pods[i] = benchPod(i)
	}
	return pods
}

// BenchmarkAuthorize is the per-request cost of the Node authorizer with
// 10,000 nodes and 200,000 pods in the graph.
func BenchmarkAuthorize(b *testing.B) {
	f := buildBenchGraph(b, benchPods200k())
	user := nodeUser("node-4242")
	p := benchPod(4242) // on node-4242
	cases := []struct {
		name  string
		attrs authz.Attributes
		want  authz.Decision
	}{
		{"secret-get", res(user, "get", "", "secrets", "", p.Namespace, p.Spec.Volumes[0].Secret.SecretName), authz.DecisionAllow},
		{"secret-get-denied", res(user, "get", "", "secrets", "", p.Namespace, "app-0-secret"), authz.DecisionNoOpinion},
		{"shared-configmap-get", res(user, "get", "", "configmaps", "", p.Namespace, "kube-root-ca.crt"), authz.DecisionAllow},
		{"lease-update", res(user, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-4242"), authz.DecisionAllow},
		{"pod-status-patch", res(user, "patch", "", "pods", "status", p.Namespace, p.Name), authz.DecisionAllow},
		{"event-create-static-rule", res(user, "create", "", "events", "", p.Namespace, ""), authz.DecisionAllow},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := f.a.Authorize(ctx, c.attrs); d != c.want {
					b.Fatalf("decision %v, want %v", d, c.want)
				}
			}
		})
	}
}

// BenchmarkGraphBuild is the time to build the graph from 200,000 pods at
// startup (the relist a restart does), and the graph's memory per pod.
func BenchmarkGraphBuild(b *testing.B) {
	pods := benchPods200k()
	list := make([]interface{}, len(pods))
	for i, p := range pods {
		list[i] = p
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		f := newFixture(b)
		before := heapInUse()
		b.StartTimer()
		if err := f.pods.Replace(list, "1"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		after := heapInUse()
		b.ReportMetric(float64(after-before)/benchPods, "graph-bytes/pod")
		runtime.KeepAlive(f)
		b.StartTimer()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestGraphMemoryPerPod bounds the graph's memory at scale so a change
// that keeps whole pods (or their strings' backing arrays) fails.
func TestGraphMemoryPerPod(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 200,000-pod graph")
	}
	pods := benchPods200k()
	before := heapInUse()
	f := buildBenchGraph(t, pods)
	after := heapInUse()
	perPod := float64(after-before) / benchPods
	t.Logf("graph: %.0f bytes/pod (%+v)", perPod, f.graph.Stats())
	if perPod > 400 {
		t.Fatalf("graph uses %.0f bytes per pod, want under 400", perPod)
	}
	runtime.KeepAlive(pods)
	runtime.KeepAlive(f)
}

// BenchmarkGraphPodUpdate is the graph's cost of a pod update that changes
// neither its node nor its references (a status update: most pod events).
func BenchmarkGraphPodUpdate(b *testing.B) {
	f := buildBenchGraph(b, benchPods200k())
	p := benchPod(4242)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.pods.Update(p); err != nil {
			b.Fatal(err)
		}
	}
}
