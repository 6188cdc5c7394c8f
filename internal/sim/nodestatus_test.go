package sim

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeObject(t *testing.T) {
	ts := newTestSim(t, 4, func(c *Config) {
		c.FullStatusHeartbeat = true
		c.Taints = []corev1.Taint{{Key: "dedicated", Value: "sim", Effect: corev1.TaintEffectNoSchedule}}
	})
	n := ts.nodes[3]
	obj := n.newNodeObject(t0)
	labels := map[string]string{
		corev1.LabelHostname: "hollow-node-3", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		corev1.LabelInstanceTypeStable: "hollow.32xlarge", corev1.LabelTopologyZone: "sim-zone-a", LabelHollowNode: "true",
	}
	for k, v := range labels {
		if obj.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, obj.Labels[k], v)
		}
	}
	if len(obj.Spec.Taints) != 1 || obj.Spec.PodCIDR != "10.0.3.0/24" {
		t.Errorf("spec %+v", obj.Spec)
	}
	ready := false
	for _, c := range obj.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	if !ready || len(obj.Status.Conditions) != 4 || obj.Status.Addresses[0].Address != "172.16.0.4" {
		t.Errorf("status %+v", obj.Status)
	}
	// A full status is what production kubelets sent every 10 s: about 15 KB.
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 13_000 || len(b) > 18_000 {
		t.Errorf("full Node is %d bytes of JSON, want about 15 KB", len(b))
	}
}
