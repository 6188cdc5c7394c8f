package defaultclass

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/admission"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// class is a class's metadata: name, creation time (seconds after t0)
// and, when annotation is set, that annotation "true".
func class(name string, age int, annotation string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))}
	if annotation != "" {
		m.Annotations = map[string]string{annotation: "true"}
	}
	return m
}

func lister(metas ...metav1.ObjectMeta) ClassLister {
	return func(context.Context) ([]metav1.Object, error) {
		out := make([]metav1.Object, 0, len(metas))
		for i := range metas {
			out = append(out, &metas[i])
		}
		return out, nil
	}
}

const (
	ingressDefault = networkingv1.AnnotationIsDefaultIngressClass
	storageDefault = "storageclass.kubernetes.io/is-default-class"
	storageBeta    = "storageclass.beta.kubernetes.io/is-default-class"
)

func TestDefaultStorageClass(t *testing.T) {
	claim := func(class *string, annotations map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", Annotations: annotations},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		classes []metav1.ObjectMeta
		claim   *corev1.PersistentVolumeClaim
		want    *string
	}{
		{name: "no class: the default", classes: []metav1.ObjectMeta{class("slow", 0, ""), class("fast", 0, storageDefault)},
			claim: claim(nil, nil), want: str("fast")},
		{name: "beta annotation marks a default too", classes: []metav1.ObjectMeta{class("old", 0, storageBeta)},
			claim: claim(nil, nil), want: str("old")},
		{name: "newest default wins", classes: []metav1.ObjectMeta{class("a", 10, storageDefault), class("b", 20, storageDefault), class("c", 5, storageDefault)},
			claim: claim(nil, nil), want: str("b")},
		{name: "equally new: first by name", classes: []metav1.ObjectMeta{class("zeta", 10, storageDefault), class("alpha", 10, storageDefault)},
			claim: claim(nil, nil), want: str("alpha")},
		{name: "no default: left unset", classes: []metav1.ObjectMeta{class("slow", 0, "")}, claim: claim(nil, nil)},
		{name: "named class kept", classes: []metav1.ObjectMeta{class("fast", 0, storageDefault)}, claim: claim(str("slow"), nil), want: str("slow")},
		{name: "empty class means none", classes: []metav1.ObjectMeta{class("fast", 0, storageDefault)}, claim: claim(str(""), nil), want: str("")},
		{name: "beta claim annotation counts as a class", classes: []metav1.ObjectMeta{class("fast", 0, storageDefault)},
			claim: claim(nil, map[string]string{betaStorageClassAnnotation: "slow"})},
		{name: "ingress annotation does not mark a storage default", classes: []metav1.ObjectMeta{class("x", 0, ingressDefault)}, claim: claim(nil, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewStorageClass(lister(tt.classes...)).Admit(context.Background(), attrs(corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), tt.claim))
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.claim.Spec.StorageClassName; (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("storageClassName = %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func TestDefaultIngressClass(t *testing.T) {
	ing := func(class *string, annotations map[string]string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: annotations},
			Spec: networkingv1.IngressSpec{IngressClassName: class}}
	}
	str := func(s string) *string { return &s }
	classes := lister(class("nginx", 0, ingressDefault), class("traefik", 0, ""))
	tests := []struct {
		name string
		ing  *networkingv1.Ingress
		list ClassLister
		want *string
	}{
		{name: "no class: the default", ing: ing(nil, nil), list: classes, want: str("nginx")},
		{name: "named class kept", ing: ing(str("traefik"), nil), list: classes, want: str("traefik")},
		{name: "class annotation counts as a class", ing: ing(nil, map[string]string{ingressClassAnnotation: "traefik"}), list: classes},
		{name: "no default", ing: ing(nil, nil), list: lister(class("traefik", 0, ""))},
		{name: "storage annotation does not mark an ingress default", ing: ing(nil, nil), list: lister(class("x", 0, storageDefault))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := NewIngressClass(tt.list).Admit(context.Background(), attrs(networkingv1.SchemeGroupVersion.WithResource("ingresses"), tt.ing)); err != nil {
				t.Fatal(err)
			}
			if got := tt.ing.Spec.IngressClassName; (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("ingressClassName = %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func TestOnlyCreatesOfItsResource(t *testing.T) {
	calls := 0
	counting := func(context.Context) ([]metav1.Object, error) { calls++; return nil, nil }
	sp, ip := NewStorageClass(counting), NewIngressClass(counting)
	if sp.Handles(admission.Update) || sp.Handles(admission.Delete) || !sp.Handles(admission.Create) || ip.Handles(admission.Update) {
		t.Fatal("the default-class plugins admit creates only")
	}
	pvcs := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	for _, a := range []*admission.Attributes{
		attrs(networkingv1.SchemeGroupVersion.WithResource("ingresses"), &networkingv1.Ingress{}),
		attrs(storagev1.SchemeGroupVersion.WithResource("storageclasses"), &storagev1.StorageClass{}),
		{Operation: admission.Create, Resource: pvcs, Subresource: "status", Object: &corev1.PersistentVolumeClaim{}},
	} {
		if err := sp.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 0 {
		t.Errorf("listed classes %d times for objects it does not default", calls)
	}
}

func TestLookupFailureIsForbidden(t *testing.T) {
	boom := errors.New("cache not ready")
	p := NewStorageClass(func(context.Context) ([]metav1.Object, error) { return nil, boom })
	err := p.Admit(context.Background(), attrs(corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), &corev1.PersistentVolumeClaim{}))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), boom.Error()) {
		t.Fatalf("err = %v, want 403 naming the lookup's error", err)
	}
}

func attrs(gvr schema.GroupVersionResource, obj runtime.Object) *admission.Attributes {
	return &admission.Attributes{Operation: admission.Create, Resource: gvr, Namespace: "default", Object: obj}
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
