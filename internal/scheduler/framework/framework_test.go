package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostPortConflicts(t *testing.T) {
	tests := []struct {
		name  string
		used  []v1.ContainerPort
		probe v1.ContainerPort
		want  bool
	}{
		{"free", nil, v1.ContainerPort{HostPort: 80}, false},
		{"same port any IP", []v1.ContainerPort{{HostPort: 80}}, v1.ContainerPort{HostPort: 80}, true},
		{"other protocol", []v1.ContainerPort{{HostPort: 80}}, v1.ContainerPort{HostPort: 80, Protocol: v1.ProtocolUDP}, false},
		{"wildcard vs specific", []v1.ContainerPort{{HostPort: 80, HostIP: "10.0.0.1"}}, v1.ContainerPort{HostPort: 80}, true},
		{"specific vs wildcard", []v1.ContainerPort{{HostPort: 80}}, v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.1"}, true},
		{"different specific IPs", []v1.ContainerPort{{HostPort: 80, HostIP: "10.0.0.2"}}, v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.1"}, false},
		{"other port", []v1.ContainerPort{{HostPort: 81}}, v1.ContainerPort{HostPort: 80}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s HostPortSet
			for _, p := range tt.used {
				s.Add(p)
			}
			if got := s.Conflicts(tt.probe); got != tt.want {
				t.Fatalf("Conflicts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodRequestsAndNodeAccounting(t *testing.T) {
	rl := func(cpu, mem string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}
	}
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "a", Resources: rl("1", "1Gi")}, {Name: "b", Resources: rl("500m", "1Gi"),
			Ports: []v1.ContainerPort{{HostPort: 8080}}}},
		// A regular init container bigger than the app containers' sum
		// sets the cpu request; a sidecar adds to both phases.
		InitContainers: []v1.Container{{Name: "i", Resources: rl("3", "100Mi")}, {Name: "s", RestartPolicy: &always, Resources: rl("100m", "64Mi")}},
		Overhead:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")},
	}}
	pi := NewPodInfo(pod)
	// cpu: max(init i alone = 3 (the sidecar starts after it),
	// apps 1.5 + sidecar 0.1) + overhead 0.05 = 3.05
	if pi.Requests.MilliCPU != 3050 || pi.Requests.AllowedPodNumber != 1 {
		t.Fatalf("requests %+v", pi.Requests)
	}
	if len(pi.HostPorts) != 1 {
		t.Fatalf("host ports %v", pi.HostPorts)
	}
	n := NewNodeInfo("n")
	n.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{Taints: []v1.Taint{
		{Key: "a", Value: "b", Effect: v1.TaintEffectNoSchedule}, {Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}}}})
	if len(n.FilterTaints) != 1 || n.TaintStatuses[0].Reasons[0] != "node(s) had untolerated taint {a: b}" || len(n.PreferTaints) != 1 {
		t.Fatalf("taints %v %v %v", n.FilterTaints, n.TaintStatuses, n.PreferTaints)
	}
	n.AddPod(pi)
	c := n.Clone()
	if _, ok := c.RemovePod("p"); !ok {
		t.Fatal("clone lost the pod")
	}
	if n.Requested.MilliCPU != 3050 || !n.UsedPorts.Conflicts(v1.ContainerPort{HostPort: 8080}) {
		t.Fatal("removing from the clone changed the original")
	}
	n.RemovePod("p")
	if n.Requested.MilliCPU != 0 || n.Requested.Memory != 0 || len(n.UsedPorts) != 0 || len(n.Pods) != 0 {
		t.Fatalf("after remove: %+v ports %v", n.Requested, n.UsedPorts)
	}
}

func TestIsScalar(t *testing.T) {
	for name, want := range map[v1.ResourceName]bool{
		"example.com/gpu": true, "hugepages-2Mi": true, "kubernetes.io/foo": false, "cpu": false, "storage.kubernetes.io/x": false,
	} {
		if got := isScalar(name); got != want {
			t.Errorf("isScalar(%s) = %v", name, got)
		}
	}
}
