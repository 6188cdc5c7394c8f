package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Table cells and selectable fields run per object on every list, watch
// event and field-selected request, so they sit on the hot path.

func BenchmarkPodCells(b *testing.B) {
	reg, _ := NewWithOptions(Options{})
	r, _ := reg.LookupResource(v1(coreGroup), "pods")
	p := testPod(func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Table.Cells(p)
	}
}

func BenchmarkPodFields(b *testing.B) {
	reg, _ := NewWithOptions(Options{})
	r, _ := reg.LookupResource(v1(coreGroup), "pods")
	p := testPod()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.SelectableFields(p)
	}
}
