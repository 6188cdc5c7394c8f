package patch

import (
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/myriad-k8s/myriad/internal/openapi"
)

var (
	hbOnce sync.Once
	hbTC   managedfields.TypeConverter
	hbErr  error
)

// heartbeatManagers are field managers for Leases and Nodes with the API
// server's reset fields: Nodes have a status subresource, Leases do not.
func heartbeatManagers(t testing.TB) *FieldManagers {
	t.Helper()
	hbOnce.Do(func() {
		var o *openapi.OpenAPI
		o, hbErr = openapi.New(openapi.Config{Resources: []openapi.Resource{
			{GroupVersionKind: schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, Resource: "leases", Namespaced: true},
			{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, Resource: "nodes"},
		}})
		if hbErr == nil {
			hbTC, hbErr = o.TypeConverter()
		}
	})
	if hbErr != nil {
		t.Fatal(hbErr)
	}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	nodeGVK := corev1.SchemeGroupVersion.WithKind("Node")
	f, err := NewFieldManagers(FieldManagersConfig{TypeConverter: hbTC, Scheme: s,
		ResetFields: func(gvk schema.GroupVersionKind, sub string) *fieldpath.Set {
			switch {
			case gvk != nodeGVK:
				return nil
			case sub == "status":
				return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
			}
			return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	past    = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	renewed = time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC)
)

// track is f.Update that must succeed, with every entry's time moved to
// past plus its index in seconds, so that a later update's time is the
// only recent one and the order of the others is fixed.
func track(t *testing.T, f *FieldManagers, live, obj runtime.Object, manager, sub string) runtime.Object {
	t.Helper()
	out, err := f.Update(live, obj, manager, sub)
	if err != nil {
		t.Fatal(err)
	}
	a := out.(metav1.Object)
	mf := a.GetManagedFields()
	for i := range mf {
		mf[i].Time = &metav1.Time{Time: past.Add(time.Duration(i) * time.Second)}
	}
	a.SetManagedFields(mf)
	return out
}

func newLease(renew time.Time) *coordinationv1.Lease {
	holder, secs := "node-1", int32(40)
	rt := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &rt},
	}
}

func newNode(beat time.Time) *corev1.Node {
	ts := metav1.NewTime(beat)
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: "R" + string(t), LastHeartbeatTime: ts, LastTransitionTime: metav1.NewTime(past)}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"a": "b"}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse), cond(corev1.NodeReady, corev1.ConditionTrue)},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}},
		},
	}
}

// heartbeatPaths are the changed fields of the cases below.
var (
	renewPath = fieldpath.MakePathOrDie("spec", "renewTime")
	beatPaths = []fieldpath.Path{
		fieldpath.MakePathOrDie("status", "conditions", fieldpath.KeyByFields("type", "MemoryPressure"), "lastHeartbeatTime"),
		fieldpath.MakePathOrDie("status", "conditions", fieldpath.KeyByFields("type", "Ready"), "lastHeartbeatTime"),
	}
)

// TestUpdateKnownMatchesUpdate: where UpdateKnown answers, its
// managedFields are Update's (the moved time within the second the two
// calls straddle at most); where it must not (the field manager would
// reassign fields, drop or merge entries, or honour the client's
// managedFields), it declines.
func TestUpdateKnownMatchesUpdate(t *testing.T) {
	f := heartbeatManagers(t)
	uid := func(o runtime.Object) runtime.Object { o.(metav1.Object).SetUID("uid-1"); return o }

	// A Lease as the kubelet creates it, then as others touch it.
	lease := uid(track(t, f, &coordinationv1.Lease{}, newLease(past), "kubelet", ""))
	leaseWith := func(mutate func(l *coordinationv1.Lease), manager string) runtime.Object {
		next := lease.DeepCopyObject().(*coordinationv1.Lease)
		mutate(next)
		return track(t, f, lease, next, manager, "")
	}
	labelled := leaseWith(func(l *coordinationv1.Lease) { l.Labels = map[string]string{"x": "y"} }, "labeller")
	stolen := leaseWith(func(l *coordinationv1.Lease) { rt := metav1.NewMicroTime(past.Add(time.Hour)); l.Spec.RenewTime = &rt }, "thief")
	otherVersion := lease.DeepCopyObject().(*coordinationv1.Lease)
	otherVersion.ManagedFields = append(otherVersion.ManagedFields, metav1.ManagedFieldsEntry{
		Manager: "old", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1beta1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}, Time: &metav1.Time{Time: past}})
	crowded := lease.DeepCopyObject().(*coordinationv1.Lease)
	for i := range 10 {
		crowded.ManagedFields = append(crowded.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: fmt.Sprintf("m%d", i), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}, Time: &metav1.Time{Time: past}})
	}
	emptyEntry := lease.DeepCopyObject().(*coordinationv1.Lease)
	emptyEntry.ManagedFields = append(emptyEntry.ManagedFields, metav1.ManagedFieldsEntry{
		Manager: "nothing", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{}`)}, Time: &metav1.Time{Time: past}})
	untracked := lease.DeepCopyObject().(*coordinationv1.Lease)
	untracked.ManagedFields = nil

	beat := func(live runtime.Object, at time.Time) func() runtime.Object {
		return func() runtime.Object {
			n := live.DeepCopyObject().(*corev1.Node)
			n.ManagedFields = nil
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(at)
			}
			return n
		}
	}
	node := uid(track(t, f, &corev1.Node{}, newNode(past), "kubelet", ""))
	// The kubelet's first status heartbeat gives it the heartbeat times
	// (its create owned no status: the main resource resets it).
	nodeStatus := uid(track(t, f, node, beat(node, past.Add(time.Minute))(), "kubelet", "status"))
	controlled := uid(track(t, f, nodeStatus, func() runtime.Object {
		n := nodeStatus.DeepCopyObject().(*corev1.Node)
		n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(past.Add(2 * time.Minute))
		return n
	}(), "node-controller", "status"))

	renew := func(live runtime.Object, at time.Time, sent func(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry) func() runtime.Object {
		return func() runtime.Object {
			l := live.DeepCopyObject().(*coordinationv1.Lease)
			rt := metav1.NewMicroTime(at)
			l.Spec.RenewTime = &rt
			l.ManagedFields = sent(l.ManagedFields)
			return l
		}
	}
	dropped := func([]metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry { return nil }
	kept := func(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry { return mf }
	reset := func([]metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry { return []metav1.ManagedFieldsEntry{} }
	edited := func(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
		mf[0].Manager = "someone-else"
		return mf
	}

	tests := []struct {
		name    string
		live    runtime.Object
		obj     func() runtime.Object
		manager string
		sub     string
		changed []fieldpath.Path
		known   bool
	}{
		{"renewal, managedFields not sent", lease, renew(lease, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, true},
		{"renewal, managedFields sent back", lease, renew(lease, renewed, kept), "kubelet", "", []fieldpath.Path{renewPath}, true},
		{"renewal beside another manager", labelled, renew(labelled, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, true},
		{"no change", lease, renew(lease, past, kept), "kubelet", "", nil, true},
		{"renewal by a new manager", lease, renew(lease, renewed, dropped), "other", "", []fieldpath.Path{renewPath}, false},
		{"renewal by the manager that took the field", stolen, renew(stolen, renewed, dropped), "thief", "", []fieldpath.Path{renewPath}, true},
		{"renewal taking the field back", stolen, renew(stolen, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"managedFields reset", lease, renew(lease, renewed, reset), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"managedFields edited", lease, renew(lease, renewed, edited), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"an entry in another version", otherVersion, renew(otherVersion, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"more update entries than the cap", crowded, renew(crowded, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"an empty entry upstream drops", emptyEntry, renew(emptyEntry, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"untracked object", untracked, renew(untracked, renewed, dropped), "kubelet", "", []fieldpath.Path{renewPath}, false},
		{"node status heartbeat", nodeStatus, beat(nodeStatus, renewed), "kubelet", "status", beatPaths, true},
		{"node heartbeat through the main resource: status is not its to own", nodeStatus, beat(nodeStatus, renewed), "kubelet", "", beatPaths, true},
		{"node heartbeat on a condition time another manager owns", controlled, beat(controlled, renewed), "kubelet", "status", beatPaths, false},
		{"node status heartbeat with no entry of the writer's yet", node, beat(node, renewed), "kubelet", "status", beatPaths, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := f.UpdateKnown(tt.live, tt.obj(), tt.manager, tt.sub, tt.changed)
			if ok != tt.known {
				t.Fatalf("UpdateKnown answered %v, want %v", ok, tt.known)
			}
			if !ok {
				return
			}
			want, err := f.Update(tt.live, tt.obj(), tt.manager, tt.sub)
			if err != nil {
				t.Fatal(err)
			}
			sameManagedFields(t, got.(metav1.Object).GetManagedFields(), want.(metav1.Object).GetManagedFields())
		})
	}
}

// sameManagedFields compares entries field by field, times to within the
// second two calls of time.Now may straddle.
func sameManagedFields(t *testing.T, got, want []metav1.ManagedFieldsEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Manager != w.Manager || g.Operation != w.Operation || g.APIVersion != w.APIVersion ||
			g.Subresource != w.Subresource || g.FieldsType != w.FieldsType || string(g.FieldsV1.Raw) != string(w.FieldsV1.Raw) {
			t.Errorf("entry %d:\n got %+v %s\nwant %+v %s", i, g, g.FieldsV1.Raw, w, w.FieldsV1.Raw)
		}
		if d := g.Time.Sub(w.Time.Time); d < -time.Second || d > time.Second {
			t.Errorf("entry %d (%s) time %v, want %v", i, g.Manager, g.Time, w.Time)
		}
	}
}
