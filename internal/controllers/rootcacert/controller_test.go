package rootcacert

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func active(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
}

func TestSync(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name     string
		objs     []runtime.Object
		wantData string // "" means no ConfigMap
	}{
		{"creates", []runtime.Object{active("a")}, ca},
		{"fixes changed data", []runtime.Object{active("a"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "a"}, Data: map[string]string{DataKey: "junk", "extra": "x"}}}, ca},
		{"terminating namespace", []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}}, ""},
		{"no namespace", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			cc := &controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()}
			// The fake clientset's REST client cannot list, so the test uses
			// the shared ConfigMap informer in place of the filtered one.
			c, err := newWith(cc, []byte(ca), f.Core().V1().Namespaces().Informer(), f.Core().V1().Namespaces().Lister(), f.Core().V1().ConfigMaps().Informer())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Queue.ShutDown) // the queue's goroutines start in New
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			f.Start(ctx.Done())
			f.WaitForCacheSync(ctx.Done())
			if err := c.sync(ctx, "a"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			cm, err := client.CoreV1().ConfigMaps("a").Get(ctx, ConfigMapName, metav1.GetOptions{})
			if tc.wantData == "" {
				if err == nil {
					t.Fatalf("ConfigMap created: %v", cm.Data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cm.Data[DataKey] != tc.wantData || len(cm.Data) != 1 {
				t.Fatalf("data = %v", cm.Data)
			}
			if cm.Annotations[descriptionAnnotation] == "" {
				t.Fatal("no description annotation")
			}
		})
	}
}

func TestNewNeedsCA(t *testing.T) {
	client := fake.NewClientset()
	if _, err := New(&controllerctx.Context{Client: client, Informers: informers.NewSharedInformerFactory(client, 0), Clock: clock.RealClock{}, Logger: slog.Default()}, nil); err == nil {
		t.Fatal("New accepted an empty CA")
	}
}

// TestEnqueueQueuesNamespaces: the handlers queue the namespace, for a
// namespace and for its ConfigMap alike (not the ConfigMap's own key).
func TestEnqueueQueuesNamespaces(t *testing.T) {
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	cc := &controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()}
	c, err := newWith(cc, []byte(ca), f.Core().V1().Namespaces().Informer(), f.Core().V1().Namespaces().Lister(), f.Core().V1().ConfigMaps().Informer())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Queue.ShutDown()
	c.enqueue(active("a"))
	c.enqueue(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "b"}})
	got := map[string]bool{}
	for c.Queue.Len() > 0 {
		k, _ := c.Queue.Get()
		got[k] = true
		c.Queue.Done(k)
	}
	if len(got) != 2 || !got["a"] || !got["b"] {
		t.Fatalf("queued %v, want namespaces a and b", got)
	}
}
