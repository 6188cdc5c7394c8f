package namespacelifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func TestAdmit(t *testing.T) {
	now := metav1.Now()
	namespaces := map[string]*corev1.Namespace{
		"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		"leaving": {ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	}
	p := New(func(_ context.Context, name string) (runtime.Object, error) {
		if ns, ok := namespaces[name]; ok {
			return ns, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	})
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	tests := []struct {
		name        string
		attrs       admission.Attributes
		wantCode    int32 // 0: admitted
		wantMessage string
	}{
		{name: "existing namespace", attrs: admission.Attributes{Resource: pods, Namespace: "default"}},
		{name: "missing namespace", attrs: admission.Attributes{Resource: pods, Namespace: "gone"}, wantCode: 404, wantMessage: `namespaces "gone" not found`},
		{name: "terminating namespace", attrs: admission.Attributes{Resource: pods, Namespace: "leaving"}, wantCode: 403, wantMessage: "because it is being terminated"},
		{name: "cluster-scoped", attrs: admission.Attributes{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "new"}},
		{name: "subresource", attrs: admission.Attributes{Resource: pods, Subresource: "binding", Namespace: "leaving"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.attrs.Operation = admission.Create
			err := p.Admit(context.Background(), &tt.attrs)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tt.wantCode || !strings.Contains(err.Error(), tt.wantMessage) {
				t.Fatalf("err = %v, want %d containing %q", err, tt.wantCode, tt.wantMessage)
			}
		})
	}
	if p.Handles(admission.Update) || p.Handles(admission.Delete) {
		t.Error("the lifecycle refuses creates only")
	}
}
