package sim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAdmit(t *testing.T) {
	alloc := usage{milliCPU: 32000, memory: 256 << 30, pods: 110}
	tests := []struct {
		name       string
		want, used usage
		reason     string
		message    string
	}{
		{"fits", usage{1000, 1 << 30, 1}, usage{30000, 200 << 30, 50}, "", ""},
		{"fits exactly", usage{2000, 56 << 30, 1}, usage{30000, 200 << 30, 109}, "", ""},
		{"no requests fits a full node", usage{0, 0, 1}, usage{32000, 256 << 30, 10}, "", ""},
		{"pods first", usage{64000, 1, 1}, usage{0, 0, 110}, "OutOfpods",
			"Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"},
		{"cpu", usage{2500, 0, 1}, usage{30000, 0, 3}, "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 2500, used: 30000, capacity: 32000"},
		{"cpu before memory", usage{40000, 300 << 30, 1}, usage{}, "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 40000, used: 0, capacity: 32000"},
		{"memory", usage{0, 2 << 30, 1}, usage{0, 255 << 30, 1}, "OutOfmemory",
			"Node didn't have enough resource: memory, requested: 2147483648, used: 273804165120, capacity: 274877906944"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := admit(tc.want, tc.used, alloc)
			if reason != tc.reason || msg != tc.message {
				t.Errorf("admit = %q %q, want %q %q", reason, msg, tc.reason, tc.message)
			}
		})
	}
}

func TestPodUsageCountsInitContainersAndOverhead(t *testing.T) {
	req := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: req("3", "1Gi")}},
		Containers:     []corev1.Container{{Name: "a", Resources: req("1", "2Gi")}, {Name: "b", Resources: req("500m", "1Gi")}},
		Overhead:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}
	// max(init 3, sum 1.5) + 0.1 overhead; memory max(1Gi, 3Gi).
	want := usage{milliCPU: 3100, memory: 3 << 30, pods: 1}
	if got := podUsage(pod); got != want {
		t.Errorf("podUsage = %+v, want %+v", got, want)
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name     string
		req, lim corev1.ResourceList
		want     corev1.PodQOSClass
	}{
		{"nothing", nil, nil, corev1.PodQOSBestEffort},
		{"requests only", rl("1", ""), nil, corev1.PodQOSBurstable},
		{"limits equal requests", rl("1", "1Gi"), rl("1", "1Gi"), corev1.PodQOSGuaranteed},
		{"limits only (requests default to them)", nil, rl("1", "1Gi"), corev1.PodQOSGuaranteed},
		{"cpu limit only", nil, rl("1", ""), corev1.PodQOSBurstable},
		{"limits above requests", rl("1", "1Gi"), rl("2", "1Gi"), corev1.PodQOSBurstable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: tc.req, Limits: tc.lim}}}}
			if got := qosClass(spec); got != tc.want {
				t.Errorf("qosClass = %s, want %s", got, tc.want)
			}
		})
	}
}
