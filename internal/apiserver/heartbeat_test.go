package apiserver

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestHeartbeatManagedFields: Lease renewals and Node status heartbeats
// keep upstream's managedFields and write semantics — the renewing
// manager's entry keeps its fields and its time moves, other entries
// stay, a field another manager took is taken back as an Update takes
// it, a renewal that changes nothing writes nothing, and every write
// bumps resourceVersion and reaches watchers.
func TestHeartbeatManagedFields(t *testing.T) {
	e := newEnv(t)
	e.createNamespace(corev1.NamespaceNodeLease)
	ctx := context.Background()
	leases := e.proto.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	as := func(m string) metav1.UpdateOptions { return metav1.UpdateOptions{FieldManager: m} }
	holder, secs := "node-1", int32(40)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
	}, metav1.CreateOptions{FieldManager: "kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lastRV := l.ResourceVersion
	written := func(l *coordv1.Lease) {
		t.Helper()
		if l.ResourceVersion == lastRV {
			t.Fatalf("resourceVersion stayed %s", lastRV)
		}
		select {
		case ev := <-w.ResultChan():
			got, ok := ev.Object.(*coordv1.Lease)
			if ev.Type != watch.Modified || !ok || got.ResourceVersion != l.ResourceVersion || !got.Spec.RenewTime.Equal(l.Spec.RenewTime) {
				t.Fatalf("watch event %s %#v, want MODIFIED at %s", ev.Type, ev.Object, l.ResourceVersion)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event")
		}
		lastRV = l.ResourceVersion
	}
	renew := func(l *coordv1.Lease, manager string, by time.Duration) *coordv1.Lease {
		t.Helper()
		next := l.DeepCopy()
		rt := metav1.NewMicroTime(l.Spec.RenewTime.Add(by))
		next.Spec.RenewTime = &rt
		next.ManagedFields = nil // as the hollow nodes send it
		out, err := leases.Update(ctx, next, as(manager))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// Another manager labels the Lease; its update keeps the managedFields
	// the client sent, so the kubelet's entry now carries an old time.
	old := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	labelled := l.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	labelled.ManagedFields[0].Time = &old
	if l, err = leases.Update(ctx, labelled, as("labeller")); err != nil {
		t.Fatal(err)
	}
	written(l)
	entries(t, l.ManagedFields, "kubelet:Update:2020", "labeller:Update:now")

	// A renewal moves the kubelet's time, keeps its fields and the
	// labeller's entry.
	before := fieldsOf(t, l.ManagedFields, "kubelet")
	l = renew(l, "kubelet", 10*time.Second)
	written(l)
	entries(t, l.ManagedFields, "kubelet:Update:now", "labeller:Update:now")
	if got := fieldsOf(t, l.ManagedFields, "kubelet"); got != before || !strings.Contains(got, `"f:renewTime"`) {
		t.Errorf("kubelet's fields %s, want %s with renewTime", got, before)
	}

	// Sent back with its managedFields, as a kubelet does, the same.
	next := l.DeepCopy()
	rt := metav1.NewMicroTime(l.Spec.RenewTime.Add(10 * time.Second))
	next.Spec.RenewTime = &rt
	if l, err = leases.Update(ctx, next, as("kubelet")); err != nil {
		t.Fatal(err)
	}
	written(l)
	entries(t, l.ManagedFields, "kubelet:Update:now", "labeller:Update:now")

	// A renewal that changes nothing writes nothing.
	same, err := leases.Update(ctx, l.DeepCopy(), as("kubelet"))
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != l.ResourceVersion {
		t.Errorf("a no-op renewal wrote: resourceVersion %s -> %s", l.ResourceVersion, same.ResourceVersion)
	}

	// Another manager renewing takes renewTime; the kubelet takes it back.
	l = renew(l, "intruder", time.Second)
	written(l)
	if !strings.Contains(fieldsOf(t, l.ManagedFields, "intruder"), "f:renewTime") || strings.Contains(fieldsOf(t, l.ManagedFields, "kubelet"), "f:renewTime") {
		t.Fatalf("after another manager's renewal: %+v", l.ManagedFields)
	}
	l = renew(l, "kubelet", time.Second)
	written(l)
	if !strings.Contains(fieldsOf(t, l.ManagedFields, "kubelet"), "f:renewTime") || fieldsOf(t, l.ManagedFields, "intruder") != "" {
		t.Fatalf("after the kubelet's renewal: %+v", l.ManagedFields)
	}

	// Node status heartbeats: the first gives the kubelet's status entry
	// the heartbeat times, the next move only its time.
	nodes := e.proto.CoreV1().Nodes()
	n, err := nodes.Create(ctx, &corev1.Node{
		// A label for the kubelet's create to own: an object with no
		// managedFields at all stays untracked, as upstream.
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(time.Now().Add(-time.Hour)), LastTransitionTime: old},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: metav1.NewTime(time.Now().Add(-time.Hour)), LastTransitionTime: old},
		}},
	}, metav1.CreateOptions{FieldManager: "kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		next := n.DeepCopy()
		for j := range next.Status.Conditions {
			next.Status.Conditions[j].LastHeartbeatTime = metav1.NewTime(n.Status.Conditions[j].LastHeartbeatTime.Add(time.Minute))
		}
		out, err := nodes.UpdateStatus(ctx, next, as("kubelet"))
		if err != nil {
			t.Fatal(err)
		}
		if out.ResourceVersion == n.ResourceVersion {
			t.Fatalf("heartbeat %d did not write", i)
		}
		n = out
		entries(t, n.ManagedFields, "kubelet:Update:now", "kubelet:Update/status:now")
		status := fieldsOf(t, n.ManagedFields, "kubelet/status")
		for _, want := range []string{`"k:{\"type\":\"Ready\"}":{`, `"k:{\"type\":\"PIDPressure\"}":{`, `"f:lastHeartbeatTime":{}`} {
			if !strings.Contains(status, want) {
				t.Errorf("heartbeat %d: the kubelet's status entry %s lacks %s", i, status, want)
			}
		}
		if strings.Contains(status, "f:reason") {
			t.Errorf("heartbeat %d: the kubelet's status entry %s owns what it never changed", i, status)
		}
	}
}

// entries checks managedFields entries as "manager:operation[/sub]:when",
// when being "now" (within a minute) or a year, in upstream's order.
func entries(t *testing.T, mf []metav1.ManagedFieldsEntry, want ...string) {
	t.Helper()
	var got []string
	for _, e := range mf {
		op := string(e.Operation)
		if e.Subresource != "" {
			op += "/" + e.Subresource
		}
		when := "none"
		if e.Time != nil {
			when = e.Time.Format("2006")
			if time.Since(e.Time.Time) < time.Minute {
				when = "now"
			}
		}
		got = append(got, e.Manager+":"+op+":"+when)
	}
	// Entries written in the same test may straddle a second, which
	// orders them: compare as sets, and check the order apart.
	sorted := func(s []string) string { s = slices.Clone(s); slices.Sort(s); return strings.Join(s, " ") }
	if sorted(got) != sorted(want) {
		t.Fatalf("managedFields %v, want %v", got, want)
	}
	if !slices.IsSortedFunc(mf, func(a, b metav1.ManagedFieldsEntry) int {
		return cmp.Or(strings.Compare(string(a.Operation), string(b.Operation)), cmp.Compare(a.Time.Unix(), b.Time.Unix()),
			strings.Compare(a.Manager, b.Manager), strings.Compare(a.APIVersion, b.APIVersion), strings.Compare(a.Subresource, b.Subresource))
	}) {
		t.Fatalf("managedFields %v not in upstream's order", got)
	}
}

// fieldsOf is the fieldsV1 of manager's entry ("name/sub" for a
// subresource's), or "".
func fieldsOf(t *testing.T, mf []metav1.ManagedFieldsEntry, manager string) string {
	t.Helper()
	name, sub, _ := strings.Cut(manager, "/")
	for _, e := range mf {
		if e.Manager == name && e.Subresource == sub && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	return ""
}
