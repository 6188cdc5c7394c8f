package schedbench

import (
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Zones nodes are spread over (label topology.kubernetes.io/zone).
const zones = 3

// Nodes returns n nodes of 32 cpu / 128 GiB / 110 pods in three zones;
// every tenth is tainted dedicated=batch:NoSchedule.
func Nodes(n int) []*v1.Node {
	out := make([]*v1.Node, n)
	for i := range out {
		name := fmt.Sprintf("node-%05d", i)
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{
				v1.LabelHostname: name, v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%zones)}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110")}},
		}
		if i%10 == 9 {
			node.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "batch", Effect: v1.TaintEffectNoSchedule}}
		}
		out[i] = node
	}
	return out
}

// template is a ReplicaSet-like pod template.
type template struct {
	name          string
	cpu, mem      string
	zone          string // nodeSelector on zone, or ""
	tolerateBatch bool
}

// templates returns n templates with requests drawn from typical sizes; a
// fifth select a zone, a tenth tolerate the batch taint.
func templates(n int, rng *rand.Rand) []template {
	cpus := []string{"100m", "250m", "500m", "1", "2"}
	mems := []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi"}
	out := make([]template, n)
	for i := range out {
		t := template{name: fmt.Sprintf("rs-%03d", i), cpu: cpus[rng.IntN(len(cpus))], mem: mems[rng.IntN(len(mems))]}
		if i%5 == 4 {
			t.zone = fmt.Sprintf("zone-%d", rng.IntN(zones))
		}
		t.tolerateBatch = i%10 == 3
		out[i] = t
	}
	return out
}

// Pods returns n pods from templates ReplicaSet-like templates, in
// creation order: each ReplicaSet's pods are created together, as a
// scale-up would.
func Pods(n, numTemplates int, seed uint64) []*v1.Pod {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	ts := templates(numTemplates, rng)
	prio := int32(0)
	out := make([]*v1.Pod, 0, n)
	for i := 0; len(out) < n; i++ {
		t := ts[i%len(ts)]
		// Pods of one template are created in runs of 10-50.
		run := 10 + rng.IntN(41)
		for j := 0; j < run && len(out) < n; j++ {
			name := fmt.Sprintf("%s-%06d", t.name, len(out))
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", UID: types.UID("uid-" + name),
					Labels:          map[string]string{"app": t.name},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: t.name, UID: types.UID("rs-" + t.name)}}},
				Spec: v1.PodSpec{
					SchedulerName: "default-scheduler",
					Priority:      &prio,
					Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(t.cpu), v1.ResourceMemory: resource.MustParse(t.mem)}}}},
				},
			}
			if t.zone != "" {
				p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: t.zone}
			}
			if t.tolerateBatch {
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "batch", Effect: v1.TaintEffectNoSchedule}}
			}
			out = append(out, p)
		}
	}
	return out
}
