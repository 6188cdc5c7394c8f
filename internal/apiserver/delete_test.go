package apiserver

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testRC(name string) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}},
	}
}

// TestDeletePropagation checks which propagation finalizer a delete
// leaves (none: the object is gone at once): the options, then a
// finalizer already there, then the resource's default, which is Orphan
// for core/v1 replicationcontrollers as upstream and Background otherwise.
func TestDeletePropagation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rcs := e.cs.CoreV1().ReplicationControllers("default")
	cms := e.cs.CoreV1().ConfigMaps("default")
	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}
	orphanDeps := func(b bool) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &b} }
	type client struct {
		create func(name string) error
		delete func(name string, opts metav1.DeleteOptions) error
		get    func(name string) (metav1.Object, error)
	}
	rc := client{
		create: func(n string) error { _, err := rcs.Create(ctx, testRC(n), metav1.CreateOptions{}); return err },
		delete: func(n string, o metav1.DeleteOptions) error { return rcs.Delete(ctx, n, o) },
		get:    func(n string) (metav1.Object, error) { return rcs.Get(ctx, n, metav1.GetOptions{}) },
	}
	cm := client{
		create: func(n string) error {
			_, err := cms.Create(ctx, testConfigMap(n, nil), metav1.CreateOptions{})
			return err
		},
		delete: func(n string, o metav1.DeleteOptions) error { return cms.Delete(ctx, n, o) },
		get:    func(n string) (metav1.Object, error) { return cms.Get(ctx, n, metav1.GetOptions{}) },
	}
	cases := []struct {
		name    string
		c       client
		deletes []metav1.DeleteOptions
		want    []string // finalizers left; nil: gone
	}{
		{"rc default orphans", rc, []metav1.DeleteOptions{{}}, []string{metav1.FinalizerOrphanDependents}},
		{"rc background", rc, []metav1.DeleteOptions{policy(metav1.DeletePropagationBackground)}, nil},
		{"rc orphanDependents false", rc, []metav1.DeleteOptions{orphanDeps(false)}, nil},
		{"rc foreground", rc, []metav1.DeleteOptions{policy(metav1.DeletePropagationForeground)}, []string{metav1.FinalizerDeleteDependents}},
		{"rc foreground kept by a plain delete", rc, []metav1.DeleteOptions{policy(metav1.DeletePropagationForeground), {}}, []string{metav1.FinalizerDeleteDependents}},
		{"rc orphan turned to background", rc, []metav1.DeleteOptions{{}, policy(metav1.DeletePropagationBackground)}, nil},
		{"configmap default is background", cm, []metav1.DeleteOptions{{}}, nil},
		{"configmap orphanDependents true", cm, []metav1.DeleteOptions{orphanDeps(true)}, []string{metav1.FinalizerOrphanDependents}},
		{"configmap orphan kept by a plain delete", cm, []metav1.DeleteOptions{policy(metav1.DeletePropagationOrphan), {}}, []string{metav1.FinalizerOrphanDependents}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "x" + string(rune('a'+i))
			if err := tc.c.create(name); err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.deletes {
				if err := tc.c.delete(name, o); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tc.c.get(name)
			switch {
			case tc.want == nil && !apierrors.IsNotFound(err):
				t.Errorf("want gone, got err %v", err)
			case tc.want != nil && err != nil:
				t.Errorf("want finalizers %v, got %v", tc.want, err)
			case tc.want != nil && (!slices.Equal(got.GetFinalizers(), tc.want) || got.GetDeletionTimestamp() == nil):
				t.Errorf("finalizers %v deletionTimestamp %v, want %v", got.GetFinalizers(), got.GetDeletionTimestamp(), tc.want)
			}
		})
	}
}
