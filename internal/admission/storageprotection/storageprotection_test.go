package storageprotection

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func TestAdmit(t *testing.T) {
	pvcs := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	pvs := corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	tests := []struct {
		name       string
		a          admission.Attributes
		want       []string
		finalizers func(runtime.Object) []string
	}{
		{"claim gets pvc-protection", admission.Attributes{Operation: admission.Create, Resource: pvcs,
			Object: &corev1.PersistentVolumeClaim{}}, []string{PVCFinalizer}, claimFinalizers},
		{"volume gets pv-protection", admission.Attributes{Operation: admission.Create, Resource: pvs,
			Object: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"x/y"}}}}, []string{"x/y", PVFinalizer}, volumeFinalizers},
		{"not added twice", admission.Attributes{Operation: admission.Create, Resource: pvcs,
			Object: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{PVCFinalizer}}}}, []string{PVCFinalizer}, claimFinalizers},
		{"status subresource left alone", admission.Attributes{Operation: admission.Create, Resource: pvcs, Subresource: "status",
			Object: &corev1.PersistentVolumeClaim{}}, nil, claimFinalizers},
		{"other resources left alone", admission.Attributes{Operation: admission.Create, Resource: pods,
			Object: &corev1.Pod{}}, nil, func(o runtime.Object) []string { return o.(*corev1.Pod).Finalizers }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			if !p.Handles(tt.a.Operation) || p.Handles(admission.Update) || p.Handles(admission.Delete) {
				t.Fatal("handles only CREATE")
			}
			if err := p.Admit(context.Background(), &tt.a); err != nil {
				t.Fatal(err)
			}
			if got := tt.finalizers(tt.a.Object); !slices.Equal(got, tt.want) {
				t.Errorf("finalizers %v, want %v", got, tt.want)
			}
		})
	}
}

func claimFinalizers(o runtime.Object) []string {
	return o.(*corev1.PersistentVolumeClaim).Finalizers
}

func volumeFinalizers(o runtime.Object) []string { return o.(*corev1.PersistentVolume).Finalizers }
