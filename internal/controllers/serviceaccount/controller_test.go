package serviceaccount

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

func TestSync(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name    string
		objs    []runtime.Object
		wantSA  bool
		wantErr bool
	}{
		{"creates default", []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}}, true, false},
		{"terminating namespace left alone", []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}}, false, false},
		{"missing namespace", nil, false, false},
		{"already there", []runtime.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "a", Labels: map[string]string{"keep": "me"}}},
		}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Queue.ShutDown) // the queue's goroutines start in New
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			f.Start(ctx.Done())
			f.WaitForCacheSync(ctx.Done())
			if err := c.sync(ctx, "a"); (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v", err)
			}
			sa, err := client.CoreV1().ServiceAccounts("a").Get(ctx, "default", metav1.GetOptions{})
			if (err == nil) != tc.wantSA {
				t.Fatalf("default SA present = %v, want %v", err == nil, tc.wantSA)
			}
			if tc.name == "already there" && sa.Labels["keep"] != "me" {
				t.Fatal("existing ServiceAccount was replaced")
			}
		})
	}
}

func TestRecreatesDeleted(t *testing.T) {
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown) // the queue's goroutines start in New
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	go c.Run(ctx, 1)
	waitFor(t, ctx, func() bool {
		_, err := client.CoreV1().ServiceAccounts("a").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	if err := client.CoreV1().ServiceAccounts("a").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		_, err := client.CoreV1().ServiceAccounts("a").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met in time")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
