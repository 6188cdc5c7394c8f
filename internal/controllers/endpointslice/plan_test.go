package endpointslice

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(targetPort intstr.IntOrString) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: targetPort, Protocol: corev1.ProtocolTCP},
		}},
	}
}

func webPod(i int, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i)), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
		},
	}
}

func pods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = webPod(i, true)
	}
	return out
}

// apply simulates the API applying a plan to the stored slices.
func applyPlan(existing []*discoveryv1.EndpointSlice, ch changes) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		byName[s.Name] = s
	}
	for _, s := range ch.update {
		byName[s.Name] = s
	}
	for _, s := range ch.delete {
		delete(byName, s.Name)
	}
	for i, s := range ch.create {
		s = s.DeepCopy()
		s.Name = fmt.Sprintf("web-new%d-%d", len(byName), i)
		s.Labels = sliceLabels(service(intstr.FromInt32(0)))
		byName[s.Name] = s
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	return out
}

func count(slices []*discoveryv1.EndpointSlice) (total int, ready int) {
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			total++
			if *ep.Conditions.Ready {
				ready++
			}
		}
	}
	return
}

func TestPlan(t *testing.T) {
	svc := service(intstr.FromString("web"))
	base := pods(250)
	start := applyPlan(nil, plan(svc, base, nil, MaxEndpoints, nil))
	tests := []struct {
		name                      string
		pods                      func() []*corev1.Pod
		svc                       *corev1.Service
		creates, updates, deletes int
		wantTotal, wantReady      int
	}{
		{"no change, no writes", func() []*corev1.Pod { return base }, svc, 0, 0, 0, 250, 250},
		{"one pod not ready: one slice", func() []*corev1.Pod {
			p := append([]*corev1.Pod(nil), base...)
			p[137] = webPod(137, false)
			return p
		}, svc, 0, 1, 0, 250, 249},
		{"one pod gone: one slice", func() []*corev1.Pod { return append(append([]*corev1.Pod(nil), base[:10]...), base[11:]...) }, svc, 0, 1, 0, 249, 249},
		{"one pod added: fills the slice with room", func() []*corev1.Pod { return append(append([]*corev1.Pod(nil), base...), webPod(250, true)) }, svc, 0, 1, 0, 251, 251},
		{"a pod terminating: not ready, still listed", func() []*corev1.Pod {
			p := append([]*corev1.Pod(nil), base...)
			p[3] = webPod(3, true)
			now := metav1.Now()
			p[3].DeletionTimestamp = &now
			return p
		}, svc, 0, 1, 0, 250, 249},
		{"ports changed: replace all", func() []*corev1.Pod { return base }, service(intstr.FromInt32(9090)), 3, 0, 3, 250, 250},
	}
	if len(start) != 3 {
		t.Fatalf("250 endpoints in %d slices, want 3", len(start))
	}
	for _, s := range start {
		if len(s.Endpoints) > MaxEndpoints {
			t.Fatalf("slice with %d endpoints", len(s.Endpoints))
		}
		if *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" {
			t.Fatalf("named targetPort not resolved: %+v", s.Ports)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := plan(tc.svc, tc.pods(), start, MaxEndpoints, nil)
			if len(ch.create) != tc.creates || len(ch.update) != tc.updates || len(ch.delete) != tc.deletes {
				t.Fatalf("create/update/delete = %d/%d/%d, want %d/%d/%d", len(ch.create), len(ch.update), len(ch.delete), tc.creates, tc.updates, tc.deletes)
			}
			after := applyPlan(start, ch)
			total, ready := count(after)
			if total != tc.wantTotal || ready != tc.wantReady {
				t.Fatalf("after: %d endpoints, %d ready; want %d, %d", total, ready, tc.wantTotal, tc.wantReady)
			}
			if again := plan(tc.svc, tc.pods(), after, MaxEndpoints, nil); len(again.create)+len(again.update)+len(again.delete) != 0 {
				t.Fatalf("not converged: second plan %d/%d/%d", len(again.create), len(again.update), len(again.delete))
			}
		})
	}
}

func TestPlanMissingNamedPort(t *testing.T) {
	svc := service(intstr.FromString("web"))
	odd := webPod(1, true)
	odd.Spec.Containers[0].Ports = nil
	ch := plan(svc, []*corev1.Pod{webPod(0, true), odd}, nil, MaxEndpoints, nil)
	if len(ch.create) != 2 {
		t.Fatalf("want one slice per port set, got %d", len(ch.create))
	}
	for _, s := range ch.create {
		if len(s.Endpoints) != 1 {
			t.Fatalf("slice has %d endpoints", len(s.Endpoints))
		}
		if s.Endpoints[0].TargetRef.Name == odd.Name && len(s.Ports) != 0 {
			t.Fatalf("pod without the named port got ports %v", s.Ports)
		}
	}
}

func TestPlanZone(t *testing.T) {
	zones := func(node string) string { return map[string]string{"n1": "zone-a"}[node] }
	ch := plan(service(intstr.FromString("web")), []*corev1.Pod{webPod(0, true)}, nil, MaxEndpoints, zones)
	if len(ch.create) != 1 || ch.create[0].Endpoints[0].Zone == nil || *ch.create[0].Endpoints[0].Zone != "zone-a" {
		t.Fatalf("zone not set: %+v", ch.create)
	}
}
