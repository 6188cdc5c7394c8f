package sim

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodIndex(t *testing.T) {
	ts := newTestSim(t, 2, func(c *Config) { c.Kubelet.Enabled = true })
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID(uid), ResourceVersion: "1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	}
	n0, n1 := ts.nodes[0], ts.nodes[1]
	if _, _, ok := ts.pods.Pod("default", "web"); ok {
		t.Fatal("found a pod before any node had it")
	}
	n0.onPod(pod("a"))
	if p, node, ok := ts.pods.Pod("default", "web"); !ok || p.UID != "a" || node != n0.name {
		t.Fatalf("Pod = %v, %q, %v; want uid a on %s", p, node, ok, n0.name)
	}
	if _, _, ok := ts.pods.Pod("kube-system", "web"); ok {
		t.Error("found the pod in another namespace")
	}
	// The name is taken by a new pod on another node before the old one's
	// deletion arrives: the deletion must not hide the new pod.
	n1.onPod(pod("b"))
	n0.onPodDeleted("a")
	if p, node, ok := ts.pods.Pod("default", "web"); !ok || p.UID != "b" || node != n1.name {
		t.Fatalf("after the old pod's deletion: %v, %q, %v; want uid b on %s", p, node, ok, n1.name)
	}
	if ts.pods.NodeDown(n1.name) {
		t.Error("a running node is down")
	}
	n1.fail()
	if !ts.pods.NodeDown(n1.name) || ts.pods.NodeDown(n0.name) {
		t.Error("NodeDown does not follow Fail")
	}
	n1.onPodDeleted("b")
	if _, _, ok := ts.pods.Pod("default", "web"); ok {
		t.Error("found a deleted pod")
	}
}

func TestNodeReportsKubeletEndpoint(t *testing.T) {
	ts := newTestSim(t, 1, nil)
	n := ts.nodes[0]
	st := n.desiredStatus(t0, nil)
	if st.Addresses[0].Address != n.hostIP || st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("without the kubelet API: %v, port %d; want %s, 10250", st.Addresses, st.DaemonEndpoints.KubeletEndpoint.Port, n.hostIP)
	}
	ts.kubelet = &kubeletListener{addr: "192.0.2.7", port: 31000}
	st = n.desiredStatus(t0, nil)
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.7"}, {Type: corev1.NodeHostName, Address: n.name}}
	if len(st.Addresses) != 2 || st.Addresses[0] != want[0] || st.Addresses[1] != want[1] || st.DaemonEndpoints.KubeletEndpoint.Port != 31000 {
		t.Errorf("with the kubelet API: %v, port %d; want %v, 31000", st.Addresses, st.DaemonEndpoints.KubeletEndpoint.Port, want)
	}
}

func TestKubeletConfigValidation(t *testing.T) {
	for name, k := range map[string]KubeletConfig{
		"hostname address": {Enabled: true, Address: "localhost"},
		"port too large":   {Enabled: true, Port: 70000},
		"negative timeout": {Enabled: true, CertificateTimeout: -1},
	} {
		if err := k.withDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	k := KubeletConfig{Enabled: true}
	if err := k.withDefaults(); err != nil || k.Address != "127.0.0.1" || k.CertificateTimeout == 0 {
		t.Errorf("defaults: %+v, %v", k, err)
	}
}

// BenchmarkPodIndexLookup is the kubelet API's pod lookup among 200,000
// pods on 10,000 nodes.
func BenchmarkPodIndexLookup(b *testing.B) {
	ts := newTestSim(b, 10000, func(c *Config) { c.Kubelet.Enabled = true })
	names := make([]string, 0, 200000)
	for i, n := range ts.nodes {
		for j := range 20 {
			name := "pod-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)}}
			n.mu.Lock()
			n.mu.pods[p.UID] = &podState{pod: p, phase: podDone}
			n.mu.Unlock()
			ts.pods.add(n, p)
			names = append(names, name)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, ok := ts.pods.Pod("default", names[i%len(names)]); !ok {
			b.Fatal("not found")
		}
		i += 7919
	}
}
