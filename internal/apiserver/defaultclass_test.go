package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDefaultClassAdmission: a claim and an ingress created right after
// the default classes (no wait between) get them; one naming a class
// keeps it.
func TestDefaultClassAdmission(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	isDefault := func(annotation string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{annotation: "true"}}
	}
	if _, err := e.cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: isDefault("storageclass.kubernetes.io/is-default-class"), Provisioner: "example.com/disk"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: isDefault(networkingv1.AnnotationIsDefaultIngressClass), Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	claim := func(name string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: class,
		}}
	}
	for name, tc := range map[string]struct{ class, want *string }{
		"unnamed": {nil, ptr("standard")},
		"named":   {ptr("local"), ptr("local")},
		"none":    {ptr(""), ptr("")},
	} {
		got, err := e.cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim(name, tc.class), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != *tc.want {
			t.Errorf("claim %s: storageClassName %v, want %q", name, got.Spec.StorageClassName, *tc.want)
		}
	}

	pt := networkingv1.PathTypePrefix
	ing, err := e.cs.NetworkingV1().Ingresses("default").Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "standard" {
		t.Errorf("ingressClassName %v, want standard", ing.Spec.IngressClassName)
	}
}
