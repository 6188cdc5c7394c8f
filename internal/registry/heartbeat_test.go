package registry

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestHeartbeat(t *testing.T) {
	reg := newTestRegistry(t)
	leases := mustLookup(t, reg, "coordination.k8s.io", "leases")
	nodes := mustLookup(t, reg, "", "nodes")
	if leases.Heartbeat == nil || nodes.Heartbeat == nil {
		t.Fatal("Leases and Nodes recognize heartbeats")
	}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	micro := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(t0.Add(d)); return &m }
	lease := func(edit func(*coordinationv1.Lease)) runtime.Object {
		holder := "node-1"
		l := &coordinationv1.Lease{
			ObjectMeta: meta("node-1", "kube-node-lease"),
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptrTo(int32(40)), RenewTime: micro(0)},
		}
		l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
		if edit != nil {
			edit(l)
		}
		return l
	}
	node := func(edit func(*corev1.Node)) runtime.Object {
		beat := metav1.NewTime(t0)
		n := &corev1.Node{
			ObjectMeta: meta("node-1", ""),
			Spec:       corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: beat},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: beat},
			}},
		}
		if edit != nil {
			edit(n)
		}
		return n
	}
	renewTime := fieldpath.MakePathOrDie("spec", "renewTime")
	beatOf := func(typ string) fieldpath.Path {
		return fieldpath.MakePathOrDie("status", "conditions", fieldpath.KeyByFields("type", typ), "lastHeartbeatTime")
	}
	tests := []struct {
		name     string
		res      *Resource
		old, obj runtime.Object
		want     []fieldpath.Path
		ok       bool
	}{
		{"lease renewed", leases, lease(nil), lease(func(l *coordinationv1.Lease) { l.Spec.RenewTime = micro(10 * time.Second) }), []fieldpath.Path{renewTime}, true},
		{"lease renewed, managedFields and apiVersion differ", leases, lease(nil), lease(func(l *coordinationv1.Lease) {
			l.Spec.RenewTime = micro(10 * time.Second)
			l.ManagedFields = nil
			l.APIVersion, l.Kind = "coordination.k8s.io/v1", "Lease"
		}), []fieldpath.Path{renewTime}, true},
		{"lease unchanged", leases, lease(nil), lease(nil), nil, true},
		{"lease renewed within the same microsecond", leases, lease(nil), lease(func(l *coordinationv1.Lease) { l.Spec.RenewTime = micro(300) }), nil, true},
		{"lease renewed and taken over", leases, lease(nil), lease(func(l *coordinationv1.Lease) {
			l.Spec.RenewTime = micro(time.Second)
			h := "node-2"
			l.Spec.HolderIdentity = &h
		}), nil, false},
		{"lease renewed and labelled", leases, lease(nil), lease(func(l *coordinationv1.Lease) {
			l.Spec.RenewTime = micro(time.Second)
			l.Labels = map[string]string{"a": "b"}
		}), nil, false},
		{"renewTime set for the first time", leases, lease(func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }), lease(nil), nil, false},
		{"renewTime cleared", leases, lease(nil), lease(func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }), nil, false},
		{"node heartbeat", nodes, node(nil), node(func(n *corev1.Node) {
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
			}
		}), []fieldpath.Path{beatOf("MemoryPressure"), beatOf("Ready")}, true},
		{"node heartbeat of one condition", nodes, node(nil), node(func(n *corev1.Node) {
			n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
		}), []fieldpath.Path{beatOf("Ready")}, true},
		{"node heartbeat within the second", nodes, node(nil), node(func(n *corev1.Node) {
			n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Millisecond))
		}), nil, true},
		{"node turns NotReady", nodes, node(nil), node(func(n *corev1.Node) {
			n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
			n.Status.Conditions[1].Status = corev1.ConditionFalse
		}), nil, false},
		{"node gains a condition", nodes, node(nil), node(func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure})
		}), nil, false},
		{"node conditions reordered", nodes, node(nil), node(func(n *corev1.Node) {
			c := n.Status.Conditions
			c[0], c[1] = c[1], c[0]
		}), nil, false},
		{"node address changes", nodes, node(nil), node(func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}}
		}), nil, false},
		{"node spec changes", nodes, node(nil), node(func(n *corev1.Node) { n.Spec.Unschedulable = true }), nil, false},
		{"node heartbeat first set", nodes, node(func(n *corev1.Node) { n.Status.Conditions[1].LastHeartbeatTime = metav1.Time{} }), node(nil), nil, false},
		{"duplicate condition types", nodes, node(func(n *corev1.Node) { n.Status.Conditions[0].Type = corev1.NodeReady }), node(func(n *corev1.Node) {
			n.Status.Conditions[0].Type = corev1.NodeReady
			n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
		}), nil, false},
		{"wrong kinds", nodes, lease(nil), lease(nil), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldCopy, objCopy := tt.old.DeepCopyObject(), tt.obj.DeepCopyObject()
			got, ok := tt.res.Heartbeat(tt.old, tt.obj)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("changed %v, want %v", got, tt.want)
			}
			for i := range got {
				if !got[i].Equals(tt.want[i]) {
					t.Errorf("changed[%d] = %v, want %v", i, got[i], tt.want[i])
				}
			}
			if !equalObjects(oldCopy, tt.old) || !equalObjects(objCopy, tt.obj) {
				t.Error("Heartbeat modified its arguments")
			}
		})
	}
}

func equalObjects(a, b runtime.Object) bool { return reflect.DeepEqual(a, b) }
