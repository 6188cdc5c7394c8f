package patch

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
)

// serverResetFields are the API server's reset fields for kinds with a
// status subresource (apiserver/fields.go).
func serverResetFields(_ schema.GroupVersionKind, sub string) *fieldpath.Set {
	if sub == "status" {
		return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
	}
	return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
}

func resetManagers(t testing.TB) *FieldManagers {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	f, err := NewFieldManagers(FieldManagersConfig{TypeConverter: typeConverter(t), Scheme: s, ResetFields: serverResetFields})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// untrimmed is upstream's field manager on the whole objects: what Update
// must match.
func untrimmed(t *testing.T, f *FieldManagers, live, obj runtime.Object, manager, sub string) []metav1.ManagedFieldsEntry {
	t.Helper()
	fm, err := f.managerFor(obj, sub)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fm.Update(live.DeepCopyObject(), obj.DeepCopyObject(), manager)
	if err != nil {
		t.Fatal(err)
	}
	return out.(metav1.Object).GetManagedFields()
}

// entries renders managedFields without their times (each run stamps now).
func entries(es []metav1.ManagedFieldsEntry) string {
	var s string
	for _, e := range es {
		fields := ""
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		s += fmt.Sprintf("%s/%s/%s/%s/%v: %s\n", e.Manager, e.Operation, e.APIVersion, e.Subresource, e.Time != nil, fields)
	}
	return s
}

// createdPod is benchPod as stored after its ReplicaSet created it.
func createdPod(t *testing.T, f *FieldManagers) *corev1.Pod {
	t.Helper()
	created, err := f.Update(&corev1.Pod{}, withStatus(benchPod(), "Pending", ""), "kube-controller-manager", "")
	if err != nil {
		t.Fatal(err)
	}
	pod := created.(*corev1.Pod)
	pod.UID = "uid-1"
	return pod
}

// TestTrimmedUpdateMatchesUpstream runs the writes of a pod's life (and a
// Deployment's) through Update, which compares copies without the reset
// fields, and through upstream's field manager on the whole objects, and
// wants the same managedFields from both.
func TestTrimmedUpdateMatchesUpstream(t *testing.T) {
	f := resetManagers(t)
	pod := createdPod(t, f)
	running := withStatus(pod.DeepCopy(), "Running", "")
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "nginx"}}
	running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	byKubelet, err := f.Update(pod, running.DeepCopy(), "kubelet", "status")
	if err != nil {
		t.Fatal(err)
	}
	otherVersion := pod.DeepCopy()
	otherVersion.ManagedFields = append(otherVersion.ManagedFields, metav1.ManagedFieldsEntry{
		Manager: "old", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1beta1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:message":{}}}`)}, Time: &metav1.Time{Time: time.Unix(1, 0)},
	})

	type step struct {
		name      string
		live, obj runtime.Object
		manager   string
		sub       string
		trims     bool
		aside     int // bystanders set aside (bystanders.go)
	}
	live := byKubelet.(*corev1.Pod)
	messaged := withStatus(live.DeepCopy(), "Running", "hello")
	cleared := withStatus(live.DeepCopy(), "Running", "")
	cleared.Status.ContainerStatuses = nil
	specAndStatus := live.DeepCopy()
	specAndStatus.Spec.Containers[0].Image = "nginx:2"
	specAndStatus.Labels = map[string]string{"new": "label"}
	specAndStatus.Status.Message = "ignored by the main resource"
	deploy := testDeployment()
	deployed, err := f.Update(&appsv1.Deployment{}, deploy, "kubectl", "")
	if err != nil {
		t.Fatal(err)
	}
	scaled := deployed.(*appsv1.Deployment).DeepCopy()
	scaled.UID = "uid-d"
	scaledStatus := scaled.DeepCopy()
	scaledStatus.Status.Replicas, scaledStatus.Status.ReadyReplicas = 3, 2
	// Ten update entries (the creator's, the kubelet's, eight labellers'):
	// a new writer's eleventh passes the cap, and upstream merges the
	// oldest. With seven labellers there is room.
	labelled := func(n int) *corev1.Pod {
		p := live.DeepCopy()
		for i := range n {
			p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{
				Manager: fmt.Sprint("labeller-", i), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(fmt.Sprintf(`{"f:metadata":{"f:labels":{"f:l%d":{}}}}`, i))}, Time: &metav1.Time{Time: time.Unix(int64(i), 0)},
			})
		}
		return p
	}
	crowded, roomy := labelled(8), labelled(7)
	// A main-resource write that sends managedFields of its own: upstream
	// uses them, not live's.
	sentOwn := specAndStatus.DeepCopy()
	sentOwn.ManagedFields = sentOwn.ManagedFields[:1]
	// An Apply entry under spec is a bystander to a status write too.
	applied := live.DeepCopy()
	applied.ManagedFields = append(applied.ManagedFields, metav1.ManagedFieldsEntry{
		Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}}}}`)}, Time: &metav1.Time{Time: time.Unix(5, 0)},
	})
	for _, s := range []step{
		{"create", &corev1.Pod{}, withStatus(benchPod(), "Pending", ""), "kube-controller-manager", "", true, 0},
		{"kubelet: Running", pod, running, "kubelet", "status", true, 1},
		{"another status writer takes a field", live, messaged, "other", "status", true, 1},
		{"the kubelet clears fields", live, cleared, "kubelet", "status", true, 1},
		{"status write trying spec and labels", live, specAndStatus, "kubelet", "status", true, 1},
		{"main write of spec, labels and status", live, specAndStatus, "editor", "", true, 1},
		{"main write sending its own managedFields", live, sentOwn, "editor", "", true, 0},
		{"no-op status write", live, live.DeepCopy(), "kubelet", "status", true, 1},
		{"an entry in another apiVersion", otherVersion, running, "kubelet", "status", false, 0},
		{"deployment status", scaled, scaledStatus, "kube-controller-manager", "status", true, 1},
		{"status write with an applied spec", applied, messaged, "other", "status", true, 2},
		{"status write past the cap", crowded, withStatus(crowded.DeepCopy(), "Running", "crowded"), "other", "status", true, 0},
		{"status write below the cap", roomy, withStatus(roomy.DeepCopy(), "Running", "roomy"), "other", "status", true, 8},
	} {
		t.Run(s.name, func(t *testing.T) {
			want := entries(untrimmed(t, f, s.live, s.obj, s.manager, s.sub))
			obj := s.obj.DeepCopyObject()
			out, err := f.Update(s.live.DeepCopyObject(), obj, s.manager, s.sub)
			if err != nil {
				t.Fatal(err)
			}
			if got := entries(out.(metav1.Object).GetManagedFields()); got != want {
				t.Errorf("managedFields:\n%s\nwant (upstream on the whole objects):\n%s", got, want)
			}
			if out != obj {
				t.Errorf("Update returned another object than the one it was given")
			}
			plan, v := f.trimFor(obj, s.sub)
			trims := plan != nil && plan.applies(v, s.live, s.obj)
			if trims != s.trims {
				t.Errorf("trimmed %v, want %v", trims, s.trims)
			}
			aside := 0
			if trims {
				if _, b := plan.setAside(s.live.(metav1.Object).GetManagedFields(), s.obj.(metav1.Object).GetManagedFields(), v, s.manager, s.sub); b != nil {
					aside = len(b.entries)
				}
			}
			if aside != s.aside {
				t.Errorf("%d entries set aside, want %d", aside, s.aside)
			}
		})
	}
}

func withStatus(p *corev1.Pod, phase corev1.PodPhase, msg string) *corev1.Pod {
	p.Status.Phase, p.Status.Message = phase, msg
	return p
}

// TestTrimCopyLeavesOriginal checks the copies share nothing the managers
// write to: the original keeps its fields and managedFields.
func TestTrimCopyLeavesOriginal(t *testing.T) {
	p := benchutil.StoredPod(1, "ns", 10)
	before := p.DeepCopy()
	plan := newTrimPlan(p, serverResetFields(schema.GroupVersionKind{}, "status"))
	if plan == nil || plan.meta < 0 || len(plan.zero) != 1 {
		t.Fatalf("plan %+v, want metadata and spec", plan)
	}
	c := plan.copy(p).(*corev1.Pod)
	if c.Spec.Containers != nil || c.Labels != nil || c.Name != p.Name || c.UID != p.UID || len(c.ManagedFields) != len(p.ManagedFields) {
		t.Errorf("copy %+v", c.ObjectMeta)
	}
	c.ManagedFields = nil
	c.Status.Phase = "changed"
	if p.ManagedFields == nil || p.Status.Phase != before.Status.Phase || len(p.Spec.Containers) != len(before.Spec.Containers) {
		t.Error("the copy wrote through to the original")
	}
	if newTrimPlan(p, nil) != nil || newTrimPlan(p, fieldpath.NewSet(fieldpath.MakePathOrDie("status", "message"))) != nil {
		t.Error("a plan with nothing whole to leave out")
	}
}

// BenchmarkFieldManagersStatus is the managedFields part of a kubelet's
// Running status write on a created pod.
func BenchmarkFieldManagersStatus(b *testing.B) {
	f := resetManagers(b)
	created, err := f.Update(&corev1.Pod{}, benchPod(), "kube-controller-manager", "")
	if err != nil {
		b.Fatal(err)
	}
	pod := created.(*corev1.Pod)
	pod.UID = "uid-1"
	running := withStatus(pod.DeepCopy(), "Running", "")
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "nginx"}}
	running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	// A hollow node's first write on a bound pod, as in density runs:
	// five conditions, a running container, the IPs, the start time.
	bound := pod.DeepCopy()
	at := metav1.NewTime(time.Unix(1_790_000_000, 0))
	bound.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at}}
	first := bound.DeepCopy()
	st := &first.Status
	st.Phase, st.QOSClass, st.StartTime = corev1.PodRunning, corev1.PodQOSBurstable, &at
	st.HostIP, st.HostIPs = "192.168.0.1", []corev1.HostIP{{IP: "192.168.0.1"}}
	st.PodIP, st.PodIPs = "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at})
	}
	st.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "registry.example.com/team/app:v1.2.3", ImageID: "registry.example.com/team/app@sha256:0123",
		ContainerID: "containerd://0123", Ready: true, Started: new(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}}
	for _, tc := range []struct {
		name      string
		live, obj *corev1.Pod
		update    func(live, obj runtime.Object) error
	}{
		{"trimmed", pod, running, func(live, obj runtime.Object) error { _, err := f.Update(live, obj, "kubelet", "status"); return err }},
		{"whole", pod, running, func(live, obj runtime.Object) error {
			fm, err := f.managerFor(obj, "status")
			if err == nil {
				_, err = fm.Update(live, obj, "kubelet")
			}
			return err
		}},
		{"first-running", bound, first, func(live, obj runtime.Object) error { _, err := f.Update(live, obj, "kubelet", "status"); return err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.update(tc.live, tc.obj.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBystandersMatchUpstream writes a pod's status and main resource
// with zero to nine more update entries beside the creator's and the
// kubelet's, by their owners and by newcomers, and wants upstream's
// managedFields from the whole objects every time, whether entries were
// set aside or the cap stopped that.
func TestBystandersMatchUpstream(t *testing.T) {
	f := resetManagers(t)
	pod := createdPod(t, f)
	ran, err := f.Update(pod, withStatus(pod.DeepCopy(), "Running", ""), "kubelet", "status")
	if err != nil {
		t.Fatal(err)
	}
	base := ran.(*corev1.Pod)
	for n := range 10 {
		live := base.DeepCopy()
		for i := range n {
			owns := fmt.Sprintf(`{"f:metadata":{"f:labels":{"f:l%d":{}}}}`, i)
			if i%3 == 2 {
				owns = fmt.Sprintf(`{"f:status":{"f:conditions":{"k:{\"type\":\"C%d\"}":{".":{},"f:status":{},"f:type":{}}}}}`, i)
				live.Status.Conditions = append(live.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(fmt.Sprint("C", i)), Status: "True"})
			}
			live.ManagedFields = append(live.ManagedFields, metav1.ManagedFieldsEntry{
				Manager: fmt.Sprint("m", i), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(owns)}, Time: &metav1.Time{Time: time.Unix(int64(100+i), 0)},
			})
		}
		status := withStatus(live.DeepCopy(), "Running", "changed")
		status.Status.Conditions = nil // taken from every condition's owner
		labels := live.DeepCopy()
		labels.Labels = map[string]string{"l0": "x", "l5": "y"}
		for _, w := range []struct {
			manager, sub string
			obj          *corev1.Pod
		}{
			{"kubelet", "status", status}, {"newcomer", "status", status}, {"m0", "", labels}, {"newcomer", "", labels},
		} {
			want := entries(untrimmed(t, f, live, w.obj, w.manager, w.sub))
			out, err := f.Update(live.DeepCopy(), w.obj.DeepCopy(), w.manager, w.sub)
			if err != nil {
				t.Fatal(err)
			}
			if got := entries(out.(metav1.Object).GetManagedFields()); got != want {
				t.Errorf("%d more entries, %s writing %q:\n%s\nwant (upstream on the whole objects):\n%s", n, w.manager, w.sub, got, want)
			}
		}
	}
}

// FuzzBystanderUnder checks setAside's scan of an entry's fields against
// structured-merge-diff's decoder: on a canonical encoding, under reports
// whether every top-level element of the set is a reset top-level field.
func FuzzBystanderUnder(f *testing.F) {
	for _, raw := range fieldsCorpus {
		f.Add([]byte(raw))
	}
	for _, raw := range []string{`{"f:spec":{}}`, `{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:x":{}}}`,
		`{"f:spec":{},"f:status":{"f:phase":{}}}`, `{"k:{\"name\":\"spec\"}":{}}`, `{"v:\"f:spec\"":{}}`} {
		f.Add([]byte(raw))
	}
	plan := &trimPlan{tops: []string{"f:metadata", "f:spec"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := plan.under(raw)
		set := &fieldpath.Set{}
		if set.FromJSON(bytes.NewReader(raw)) != nil {
			return
		}
		if enc, err := set.ToJSON(); err != nil || !bytes.Equal(enc, raw) {
			return // stored sets are canonical; others only must not crash the scan
		}
		want := true
		top := func(pe fieldpath.PathElement) {
			if pe.FieldName == nil || (*pe.FieldName != "metadata" && *pe.FieldName != "spec") {
				want = false
			}
		}
		set.Members.Iterate(top)
		set.Children.Iterate(top)
		if got != want {
			t.Fatalf("%s: under says %v, the decoded set %v", raw, got, want)
		}
	})
}
