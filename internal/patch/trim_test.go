package patch

import (
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

// TestTrimmedUpdateMatchesUpstream runs the writes of a pod's life (and a
// Deployment's) through Update, which compares copies without the reset
// fields, and through upstream's field manager on the whole objects, and
// wants the same managedFields from both.
func TestTrimmedUpdateMatchesUpstream(t *testing.T) {
	f := resetManagers(t)
	created, err := f.Update(&corev1.Pod{}, withStatus(benchPod(), "Pending", ""), "kube-controller-manager", "")
	if err != nil {
		t.Fatal(err)
	}
	pod := created.(*corev1.Pod)
	pod.UID = "uid-1"
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
	for _, s := range []step{
		{"create", &corev1.Pod{}, withStatus(benchPod(), "Pending", ""), "kube-controller-manager", "", true},
		{"kubelet: Running", pod, running, "kubelet", "status", true},
		{"another status writer takes a field", live, messaged, "other", "status", true},
		{"the kubelet clears fields", live, cleared, "kubelet", "status", true},
		{"status write trying spec and labels", live, specAndStatus, "kubelet", "status", true},
		{"main write of spec, labels and status", live, specAndStatus, "editor", "", true},
		{"no-op status write", live, live.DeepCopy(), "kubelet", "status", true},
		{"an entry in another apiVersion", otherVersion, running, "kubelet", "status", false},
		{"deployment status", scaled, scaledStatus, "kube-controller-manager", "status", true},
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
			if trims := plan != nil && plan.applies(v, s.live, s.obj); trims != s.trims {
				t.Errorf("trimmed %v, want %v", trims, s.trims)
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
	for _, tc := range []struct {
		name   string
		update func(live, obj runtime.Object) error
	}{
		{"trimmed", func(live, obj runtime.Object) error { _, err := f.Update(live, obj, "kubelet", "status"); return err }},
		{"whole", func(live, obj runtime.Object) error {
			fm, err := f.managerFor(obj, "status")
			if err == nil {
				_, err = fm.Update(live, obj, "kubelet")
			}
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.update(pod, running.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
