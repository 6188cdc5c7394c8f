package endpointslice

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

func TestControllerFollowsReadiness(t *testing.T) {
	svc := service(intstr.FromString("web"))
	client := fake.NewClientset(svc, webPod(0, true), webPod(1, false))
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slices := func() []discoveryv1.EndpointSlice {
		l, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	// Each wait watches the slices from before the writes it waits for.
	watchSlices := func() watch.Interface {
		w, err := client.DiscoveryV1().EndpointSlices("ns").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	waitReady := func(w watch.Interface, want int) *discoveryv1.EndpointSlice {
		t.Helper()
		var got *discoveryv1.EndpointSlice
		podcontroltest.Until(t, w, fmt.Sprintf("one slice with %d ready endpoints", want), func() bool {
			l := slices()
			if len(l) != 1 {
				return false
			}
			_, ready := count([]*discoveryv1.EndpointSlice{&l[0]})
			got = &l[0]
			return ready == want
		})
		return got
	}
	first := watchSlices()
	f.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx, 2); close(done) }()
	defer func() { cancel(); <-done; f.Shutdown() }()
	s := waitReady(first, 1)
	if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
		t.Fatalf("labels %v", s.Labels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != svc.UID || s.OwnerReferences[0].Controller == nil || !*s.OwnerReferences[0].Controller {
		t.Fatalf("owner references %+v", s.OwnerReferences)
	}
	second := watchSlices()
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, webPod(1, true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady(second, 2)
	gone := watchSlices()
	if err := client.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	podcontroltest.Until(t, gone, "the slices go with the Service", func() bool { return len(slices()) == 0 })
}
