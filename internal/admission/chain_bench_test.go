package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/namespacelifecycle"
	"github.com/myriad-k8s/myriad/internal/admission/priority"
	"github.com/myriad-k8s/myriad/internal/admission/serviceip"
)

// BenchmarkChainPodCreate is the admission a pod create costs with the
// API server's built-in plugins, their lookups answered from memory as
// the namespaces cache answers them: what the chain adds to every create
// on top of the lookups themselves.
func BenchmarkChainPodCreate(b *testing.B) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 100}
	alloc, err := serviceip.New("", "")
	if err != nil {
		b.Fatal(err)
	}
	c, err := admission.NewChain(
		namespacelifecycle.New(func(context.Context, string) (runtime.Object, error) { return ns, nil }),
		priority.New(func(context.Context, string) (*schedulingv1.PriorityClass, error) { return pc, nil }),
		alloc,
	)
	if err != nil {
		b.Fatal(err)
	}
	for _, class := range []string{"", "batch"} {
		b.Run("class="+class, func(b *testing.B) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{PriorityClassName: class}}
			b.ReportAllocs()
			for b.Loop() {
				a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
					Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: "default", Name: "p", Object: pod,
					Options: &metav1.CreateOptions{}}
				pod.Spec.Priority = nil
				if err := write(c, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
