package priority

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// classes is a ClassGetter over a map, as the store answers it.
func classes(pcs ...*schedulingv1.PriorityClass) ClassGetter {
	m := map[string]*schedulingv1.PriorityClass{}
	for _, pc := range pcs {
		m[pc.Name] = pc
	}
	return func(_ context.Context, name string) (*schedulingv1.PriorityClass, error) {
		if pc, ok := m[name]; ok {
			return pc.DeepCopy(), nil
		}
		return nil, apierrors.NewNotFound(schedulingv1.Resource("priorityclasses"), name)
	}
}

func TestAdmit(t *testing.T) {
	never := corev1.PreemptNever
	get := classes(
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch-low"}, Value: 100, PreemptionPolicy: &never},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "no-policy"}, Value: 5},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000},
	)
	i32 := func(v int32) *int32 { return &v }
	pod := func(class string, priority *int32) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{PriorityClassName: class, Priority: priority}}
	}
	tests := []struct {
		name         string
		pod          *corev1.Pod
		get          ClassGetter
		wantPriority *int32
		wantPolicy   *corev1.PreemptionPolicy
		wantErr      string // 403 containing this
	}{
		{name: "no class: left to defaulting", pod: pod("", nil)},
		{name: "user class", pod: pod("batch-low", nil), wantPriority: i32(100), wantPolicy: &never},
		{name: "class without a policy keeps the pod's", pod: pod("no-policy", nil), wantPriority: i32(5)},
		{name: "matching explicit value", pod: pod("batch-low", i32(100)), wantPriority: i32(100), wantPolicy: &never},
		{name: "conflicting explicit value", pod: pod("batch-low", i32(7)), wantErr: "must not be provided in pod spec"},
		{name: "unknown class", pod: pod("nope", nil), wantErr: "no PriorityClass with name nope was found"},
		{name: "system class", pod: pod("system-node-critical", i32(2000001000)), wantPriority: i32(2000001000)},
		{name: "system class not created yet", pod: pod("system-cluster-critical", i32(2000000000)), get: classes(), wantPriority: i32(2000000000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			get := get
			if tt.get != nil {
				get = tt.get
			}
			err := New(get).Admit(context.Background(), &admission.Attributes{
				Operation: admission.Create, Resource: podsResource, Namespace: "default", Name: "p", Object: tt.pod})
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want 403 containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.pod.Spec.Priority; (got == nil) != (tt.wantPriority == nil) || got != nil && *got != *tt.wantPriority {
				t.Errorf("priority = %v, want %v", deref(got), deref(tt.wantPriority))
			}
			if got := tt.pod.Spec.PreemptionPolicy; (got == nil) != (tt.wantPolicy == nil) || got != nil && *got != *tt.wantPolicy {
				t.Errorf("preemptionPolicy = %v, want %v", deref(got), deref(tt.wantPolicy))
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestAdmitPassesLookupErrors(t *testing.T) {
	boom := errors.New("store unavailable")
	p := New(func(context.Context, string) (*schedulingv1.PriorityClass, error) { return nil, boom })
	pod := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "x"}}
	if err := p.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsResource, Object: pod}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the lookup's", err)
	}
}

func TestOnlyPodCreates(t *testing.T) {
	p := New(classes())
	if p.Handles(admission.Update) || p.Handles(admission.Delete) || !p.Handles(admission.Create) {
		t.Fatal("Priority admits pod creates only")
	}
	// A binding is a pods subresource: not the pod's spec.
	err := p.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsResource, Subresource: "binding", Object: &corev1.Binding{}})
	if err != nil {
		t.Fatal(err)
	}
}
