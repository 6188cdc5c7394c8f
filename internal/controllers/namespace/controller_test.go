package namespace

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cmGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

var kinds = map[string]string{"pods": "Pod", "configmaps": "ConfigMap"}

func object(kind, ns, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
	}
}

func terminating(name string) *corev1.Namespace {
	now := metav1.Now()
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &now},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
}

func TestSync(t *testing.T) {
	tests := []struct {
		name          string
		ns            *corev1.Namespace
		objects       []runtime.Object
		stuck         string // an object whose delete does nothing (a finalizer holds it)
		wantErr       error
		wantFinalized bool
		wantLeft      []string // names left in the store
		wantCondition corev1.NamespaceConditionType
	}{
		{
			name:          "empties and finalizes",
			ns:            terminating("a"),
			objects:       []runtime.Object{object("Pod", "a", "p1"), object("ConfigMap", "a", "c1"), object("ConfigMap", "b", "other")},
			wantFinalized: true,
			wantLeft:      []string{"other"},
		},
		{
			// Ordered deletion: while a pod remains nothing else is deleted.
			name:          "pods go first",
			ns:            terminating("a"),
			objects:       []runtime.Object{object("Pod", "a", "p1", "example.com/hold"), object("ConfigMap", "a", "c1")},
			stuck:         "p1",
			wantErr:       errRemaining,
			wantLeft:      []string{"c1", "p1"},
			wantCondition: corev1.NamespaceFinalizersRemaining,
		},
		{
			name:          "waits for content with finalizers",
			ns:            terminating("a"),
			objects:       []runtime.Object{object("Pod", "a", "p1"), object("ConfigMap", "a", "c1", "example.com/hold")},
			stuck:         "c1",
			wantErr:       errRemaining,
			wantLeft:      []string{"c1"},
			wantCondition: corev1.NamespaceFinalizersRemaining,
		},
		{
			name:     "active namespace untouched",
			ns:       &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			objects:  []runtime.Object{object("Pod", "a", "p1")},
			wantLeft: []string{"p1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.ns)
			d := client.Discovery().(*fakediscovery.FakeDiscovery)
			all := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "watch"}
			d.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"delete", "list", "get"}},
				{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
				{Name: "namespaces", Kind: "Namespace", Verbs: all},
			}}}
			scheme := runtime.NewScheme()
			for _, k := range []string{"Pod", "ConfigMap"} {
				scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: k}, &metav1.PartialObjectMetadata{})
				scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: k + "List"}, &metav1.PartialObjectMetadataList{})
			}
			md := metadatafake.NewSimpleMetadataClient(scheme, tc.objects...)
			// The fake tracker knows no deletecollection or finalizers:
			// implement both the way the API server does.
			md.PrependReactor("delete-collection", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
				list, err := md.Tracker().List(a.GetResource(), schema.GroupVersionKind{Version: "v1", Kind: kinds[a.GetResource().Resource]}, a.GetNamespace())
				if err != nil {
					return true, nil, err
				}
				for _, m := range list.(*metav1.PartialObjectMetadataList).Items {
					if m.Name != tc.stuck {
						_ = md.Tracker().Delete(a.GetResource(), a.GetNamespace(), m.Name)
					}
				}
				return true, nil, nil
			})
			md.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.(clienttesting.DeleteAction).GetName() == tc.stuck {
					return true, nil, nil
				}
				return false, nil, nil
			})
			clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
			c, err := New(&controllerctx.Context{Client: client, Metadata: md, Informers: informers.NewSharedInformerFactory(client, 0), Clock: clk, Logger: slog.Default()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Queue.ShutDown) // the queue's goroutines start in New
			ctx := context.Background()
			err = c.sync(ctx, "a")
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("sync error = %v, want %v", err, tc.wantErr)
			}
			var left []string
			for _, gvr := range []schema.GroupVersionResource{podsGVR, cmGVR} {
				for _, ns := range []string{"a", "b"} {
					l, err := md.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					for _, it := range l.Items {
						left = append(left, it.Name)
					}
				}
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.wantLeft) {
				t.Fatalf("left %v, want %v", left, tc.wantLeft)
			}
			finalized := false
			for _, a := range client.Actions() {
				if a.GetSubresource() == "finalize" {
					finalized = true
					ns := a.(clienttesting.UpdateAction).GetObject().(*corev1.Namespace)
					if slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
						t.Fatal("finalize kept the kubernetes finalizer")
					}
				}
			}
			if finalized != tc.wantFinalized {
				t.Fatalf("finalized = %v, want %v", finalized, tc.wantFinalized)
			}
			if tc.wantCondition != "" {
				ns, err := client.CoreV1().Namespaces().Get(ctx, "a", metav1.GetOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				i := slices.IndexFunc(ns.Status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == tc.wantCondition })
				if i < 0 || ns.Status.Conditions[i].Status != corev1.ConditionTrue {
					t.Fatalf("condition %s not true: %+v", tc.wantCondition, ns.Status.Conditions)
				}
			}
		})
	}
}
