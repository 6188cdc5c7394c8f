package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestCreateManagedFields: pods created alike, as a ReplicaSet creates
// them (the field managers remember the first one's fields), each get
// their creator's entry with the fields they hold, under their own names;
// a pod that differs gets its own fields. The ServiceAccount admission
// plugin gives each pod a token volume of its own name after the fields
// are recorded, as upstream, so the volume is in no set and the pods'
// sets stay alike.
func TestCreateManagedFields(t *testing.T) {
	signer, _ := testSigner(t, "https://kubernetes.default.svc")
	e := newEnv(t, withConfig(func(c *Config) {
		c.ServiceAccounts = &ServiceAccountConfig{Signer: signer, MaxExpiration: time.Hour}
	}))
	ctx := context.Background()
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := e.proto.CoreV1().Pods("default")
	template := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "web-",
			Labels:       map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: new(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	create := func(p *corev1.Pod) *corev1.Pod {
		t.Helper()
		out, err := pods.Create(ctx, p, metav1.CreateOptions{FieldManager: "replicaset-controller"})
		if err != nil {
			t.Fatal(err)
		}
		entries(t, out.ManagedFields, "replicaset-controller:Update:now")
		if !hasTokenVolume(out) {
			t.Fatalf("pod %s has no token volume: %+v", out.Name, out.Spec.Volumes)
		}
		if f := fieldsOf(t, out.ManagedFields, "replicaset-controller"); strings.Contains(f, "kube-api-access") || strings.Contains(f, `"f:volumes"`) {
			t.Fatalf("the creator owns the admission plugin's volume: %s", f)
		}
		got, err := pods.Get(ctx, out.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fieldsOf(t, got.ManagedFields, "replicaset-controller") != fieldsOf(t, out.ManagedFields, "replicaset-controller") {
			t.Fatalf("stored %v, returned %v", got.ManagedFields, out.ManagedFields)
		}
		return got
	}

	first := create(template.DeepCopy())
	fields := fieldsOf(t, first.ManagedFields, "replicaset-controller")
	for _, want := range []string{`"f:generateName"`, `"f:app"`, `"k:{\"uid\":\"rs-uid\"}"`, `"k:{\"name\":\"c\"}"`, `"f:image"`} {
		if !strings.Contains(fields, want) {
			t.Errorf("first pod's fields %s lack %s", fields, want)
		}
	}
	names := map[string]bool{first.Name: true}
	for range 3 {
		p := create(template.DeepCopy())
		if got := fieldsOf(t, p.ManagedFields, "replicaset-controller"); got != fields {
			t.Errorf("pod %s's fields %s, want the first's %s", p.Name, got, fields)
		}
		if names[p.Name] || !strings.HasPrefix(p.Name, "web-") || p.UID == first.UID {
			t.Errorf("pod %s (uid %s) is not a pod of its own", p.Name, p.UID)
		}
		names[p.Name] = true
	}

	other := template.DeepCopy()
	other.Labels["tier"] = "front"
	p := create(other)
	if got := fieldsOf(t, p.ManagedFields, "replicaset-controller"); got == fields || !strings.Contains(got, `"f:tier"`) {
		t.Errorf("a pod with another label has fields %s", got)
	}
}

// TestManagedFieldsBeforeMutatingAdmission: a mutating webhook's changes
// belong to no manager, on a create and on an update, as upstream records
// managed fields before mutating admission; a webhook that leaves
// managedFields undecodable has them put back as recorded, with
// upstream's warning.
func TestManagedFieldsBeforeMutatingAdmission(t *testing.T) {
	e := newEnv(t)
	cs, warns := e.warningClient(t)
	jsonPatch := admissionv1.PatchTypeJSONPatch
	hook := newHookServer(t, func(_ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		patch := `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		if req.Name == "corrupt" {
			patch = `[{"op":"replace","path":"/metadata/managedFields","value":[{"manager":"hook","operation":"Bogus","fieldsType":"FieldsV1","fieldsV1":{}}]}]`
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &jsonPatch}
	})
	e.createMutatingHooks("mutate", mutatingHook("mutate.myriad.test", hook.clientConfig("/mutate"), configMapRule()))
	untilEffective(t, e.cs, "default", func(error) bool { return hook.calls("/mutate") > 0 })
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	owned := func(cm *corev1.ConfigMap, want string) {
		t.Helper()
		f := fieldsOf(t, cm.ManagedFields, "tester")
		if cm.Labels["mutated"] != "yes" || !strings.Contains(f, want) || strings.Contains(f, "f:mutated") {
			t.Fatalf("labels %v, tester's fields %s: want %s and the webhook's label owned by no one", cm.Labels, f, want)
		}
	}

	got, err := cms.Create(ctx, configMap("default", "m", map[string]string{"a": "b"}), metav1.CreateOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	owned(got, `"f:a"`)
	got.Labels = map[string]string{"c": "d"}
	if got, err = cms.Update(ctx, got, metav1.UpdateOptions{FieldManager: "tester"}); err != nil {
		t.Fatal(err)
	}
	owned(got, `"f:c"`)
	if got, err = cms.Patch(ctx, "m", types.MergePatchType, []byte(`{"metadata":{"labels":{"e":"f"}}}`), metav1.PatchOptions{FieldManager: "tester"}); err != nil {
		t.Fatal(err)
	}
	owned(got, `"f:e"`)

	warns.take()
	got, err = cms.Create(ctx, configMap("default", "corrupt", map[string]string{"a": "b"}), metav1.CreateOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	entries(t, got.ManagedFields, "tester:Update:now")
	if w := warns.take(); len(w) != 1 || !strings.Contains(w[0], ".metadata.managedFields was in an invalid state after admission") {
		t.Errorf("warnings %q, want upstream's for invalid managedFields", w)
	}
}
