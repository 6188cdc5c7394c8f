package endpointslice

import (
	"context"
	"log/slog"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

func TestControllerFollowsReadiness(t *testing.T) {
	svc := service(intstr.FromString("web"))
	client := fake.NewClientset(svc, webPod(0, true), webPod(1, false))
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	go c.Run(ctx, 2)
	waitReady := func(want int) *discoveryv1.EndpointSlice {
		t.Helper()
		for {
			l, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) == 1 {
				_, ready := count([]*discoveryv1.EndpointSlice{&l.Items[0]})
				if ready == want {
					return &l.Items[0]
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("no single slice with %d ready endpoints: %+v", want, l.Items)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s := waitReady(1)
	if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
		t.Fatalf("labels %v", s.Labels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID || s.OwnerReferences[0].Controller == nil || !*s.OwnerReferences[0].Controller {
		t.Fatalf("owner references %+v", s.OwnerReferences)
	}
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, webPod(1, true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(2)
	if err := client.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		l, _ := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
		if len(l.Items) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("slices stayed after the Service was deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
