package registry

import (
	"reflect"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// HeartbeatFunc recognizes a write that moves nothing but a kind's
// heartbeat timestamps. It returns the leaf fields in which obj differs
// from old, compared as structured-merge-diff compares them (values as
// they serialize: a MicroTime to the microsecond, a Time to the second),
// and false when obj differs from old in anything else besides metadata
// no field manager owns (resourceVersion, managedFields, apiVersion and
// kind), or when a heartbeat field was set or cleared rather than moved.
// Both objects are only read.
//
// Why: at 10,000 nodes the kubelets' heartbeats are most of an idle
// cluster's writes (a Lease renewal every 10 s, a Node status every
// 60 s), and recording their managedFields the general way converts both
// objects to typed values and compares them in full; knowing the change
// lets the API server derive the same managedFields from the entries
// alone (patch.FieldManagers.UpdateKnown).
type HeartbeatFunc func(old, obj runtime.Object) (changed []fieldpath.Path, ok bool)

var renewTimePath = fieldpath.MakePathOrDie("spec", "renewTime")

// leaseHeartbeat: a renewal moves spec.renewTime.
func leaseHeartbeat(old, obj runtime.Object) ([]fieldpath.Path, bool) {
	o, ok1 := old.(*coordinationv1.Lease)
	n, ok2 := obj.(*coordinationv1.Lease)
	if !ok1 || !ok2 || !sameMetadata(&o.ObjectMeta, &n.ObjectMeta) {
		return nil, false
	}
	os, ns := o.Spec, n.Spec
	os.RenewTime, ns.RenewTime = nil, nil
	if !reflect.DeepEqual(os, ns) {
		return nil, false
	}
	ot, nt := o.Spec.RenewTime, n.Spec.RenewTime
	if ot == nil || nt == nil || ot.IsZero() || nt.IsZero() {
		// Set, cleared, or null: only "no change" is simple.
		return nil, reflect.DeepEqual(ot, nt)
	}
	// As it serializes (MarshalJSON, which the unstructured converter uses).
	if ot.UTC().Format(metav1.RFC3339Micro) == nt.UTC().Format(metav1.RFC3339Micro) {
		return nil, true
	}
	return []fieldpath.Path{renewTimePath}, true
}

// nodeHeartbeat: a kubelet's status update moves its conditions'
// lastHeartbeatTime (status.conditions is a map list keyed by type).
func nodeHeartbeat(old, obj runtime.Object) ([]fieldpath.Path, bool) {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := obj.(*corev1.Node)
	if !ok1 || !ok2 || !sameMetadata(&o.ObjectMeta, &n.ObjectMeta) || !reflect.DeepEqual(o.Spec, n.Spec) {
		return nil, false
	}
	oc, nc := o.Status.Conditions, n.Status.Conditions
	if len(oc) != len(nc) {
		return nil, false
	}
	var changed []fieldpath.Path
	for i := range oc {
		a, b := oc[i], nc[i]
		if a.Type != b.Type {
			return nil, false
		}
		for j := range i {
			if oc[j].Type == a.Type {
				return nil, false // duplicate keys: leave it to the general path
			}
		}
		ta, tb := a.LastHeartbeatTime, b.LastHeartbeatTime
		a.LastHeartbeatTime, b.LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !reflect.DeepEqual(a, b) {
			return nil, false
		}
		switch {
		case ta.IsZero() || tb.IsZero():
			if ta.IsZero() != tb.IsZero() {
				return nil, false
			}
		case ta.Unix() != tb.Unix():
			// metav1.Time serializes whole seconds.
			changed = append(changed, fieldpath.MakePathOrDie("status", "conditions",
				fieldpath.KeyByFields("type", string(a.Type)), "lastHeartbeatTime"))
		}
	}
	os, ns := o.Status, n.Status
	os.Conditions, ns.Conditions = nil, nil
	if !reflect.DeepEqual(os, ns) {
		return nil, false
	}
	return changed, true
}

// sameMetadata reports whether a and b are equal but for managedFields.
func sameMetadata(a, b *metav1.ObjectMeta) bool {
	x, y := *a, *b
	x.ManagedFields, y.ManagedFields = nil, nil
	return reflect.DeepEqual(x, y)
}
