package apiserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCreateManagedFields: pods created alike, as a ReplicaSet creates
// them (the field managers remember the first one's fields), each get
// their creator's entry with the fields they hold, under their own names;
// a pod that differs gets its own fields.
func TestCreateManagedFields(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
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
