package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// With Leases, Node status is written on the node's grid every
// NodeStatusInterval (60 s here) and not in between, unless it changed: a
// recovered node (whose Ready condition the node lifecycle controller will
// have set to Unknown in a real cluster) writes at once, and then skips its
// next slot if that is under half a period away.
func TestNodeStatusWrittenEveryIntervalOrOnChange(t *testing.T) {
	const never = time.Duration(0)
	tests := []struct {
		name              string
		failAt, recoverAt time.Duration // since start; never for no failure
		want              []time.Duration
	}{
		{"idle", never, never, []time.Duration{60 * time.Second, 120 * time.Second, 180 * time.Second, 240 * time.Second}},
		{"recovery writes at once, next slot 25 s on skipped", 125 * time.Second, 155 * time.Second,
			[]time.Duration{60 * time.Second, 120 * time.Second, 155 * time.Second, 240 * time.Second}},
		{"recovery writes at once, next slot 40 s on kept", 125 * time.Second, 140 * time.Second,
			[]time.Duration{60 * time.Second, 120 * time.Second, 140 * time.Second, 180 * time.Second, 240 * time.Second}},
		{"failed over two slots", 110 * time.Second, 185 * time.Second,
			[]time.Duration{60 * time.Second, 185 * time.Second, 240 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// node 0 of 1: its slots are start + k·60 s
			ts := newTestSim(t, 1, func(c *Config) { c.NodeStatusInterval = time.Minute })
			writes := ts.record("update", "nodes")
			ts.run(t)
			name := ts.NodeNames()[0]
			advanceTo := func(d time.Duration) {
				t.Helper()
				ts.advance(t, d-ts.clock.Since(t0), time.Second)
			}
			if tc.failAt != never {
				advanceTo(tc.failAt)
				if err := ts.Fail(name); err != nil {
					t.Fatal(err)
				}
				advanceTo(tc.recoverAt)
				if err := ts.Recover(name); err != nil {
					t.Fatal(err)
				}
			}
			advanceTo(245 * time.Second)
			var got []time.Duration
			for _, at := range writes.get(name) {
				got = append(got, at.Sub(t0))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("status written at %v, want %v", got, tc.want)
			}
			if st := ts.Stats(); st.NodeStatusUpdates != uint64(len(tc.want)) || st.NodeStatusErrors != 0 {
				t.Errorf("Stats: %d status updates, %d errors; want %d, 0", st.NodeStatusUpdates, st.NodeStatusErrors, len(tc.want))
			}
			obj, err := ts.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			last := tc.want[len(tc.want)-1]
			for _, c := range obj.Status.Conditions {
				if c.Type == corev1.NodeReady && (c.Status != corev1.ConditionTrue || !c.LastHeartbeatTime.Time.Equal(t0.Add(last))) {
					t.Errorf("Ready %s heartbeat +%v, want True at +%v", c.Status, c.LastHeartbeatTime.Sub(t0), last)
				}
			}
		})
	}
}
