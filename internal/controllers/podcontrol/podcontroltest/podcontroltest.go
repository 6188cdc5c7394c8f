// Package podcontroltest builds the fake clientsets and contexts the
// workload controllers' unit tests run against. The fake clientset does not
// implement generateName or assign UIDs; NewClientset adds both, as the
// API server would.
package podcontroltest

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// NewClientset returns a fake clientset holding objs that fills in
// generateName, UIDs and creation timestamps (from clk) on create.
func NewClientset(clk *clocktesting.FakeClock, objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := action.(k8stesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		m, err := meta.Accessor(ca.GetObject())
		if err != nil {
			return false, nil, nil
		}
		i := n.Add(1)
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), i))
		}
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
		}
		if ts := m.GetCreationTimestamp(); ts.IsZero() {
			m.SetCreationTimestamp(metaNow(clk))
		}
		return false, nil, nil // fall through to the tracker
	})
	return c
}

// NewContext returns a controller context on client with a fake clock.
func NewContext(client *fake.Clientset, clk *clocktesting.FakeClock) *controllerctx.Context {
	return &controllerctx.Context{
		Client:    client,
		Informers: informers.NewSharedInformerFactory(client, 0),
		Clock:     clk,
		Logger:    slog.New(slog.DiscardHandler),
	}
}

// NewClock returns a fake clock at a fixed instant.
func NewClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
}

func metaNow(clk *clocktesting.FakeClock) metav1.Time { return metav1.Time{Time: clk.Now()} }

// Harness is a workload controller's test setup: a fake clientset holding
// objs (see NewClientset), a context on it with the fake clock clk, and the
// controller new builds from it, whose queue is shut down when t ends
// (its goroutines start in New). objs are also put in the informers'
// caches by hand: the tests decide what the controller has seen.
func Harness[C interface{ ShutDown() }](t testing.TB, clk *clocktesting.FakeClock, new func(*controllerctx.Context) (C, error), objs ...runtime.Object) (C, *fake.Clientset, *controllerctx.Context) {
	t.Helper()
	client := NewClientset(clk, objs...)
	c := NewContext(client, clk)
	ctrl, err := new(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.ShutDown)
	Fill(t, c, objs...)
	return ctrl, client, c
}

// Fill adds objs to the caches of c's informers for their kinds, as if
// the informers had listed them.
func Fill(t testing.TB, c *controllerctx.Context, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		gvks, _, err := scheme.Scheme.ObjectKinds(o)
		if err != nil {
			t.Fatal(err)
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
		inf, err := c.Informers.ForResource(gvr)
		if err != nil {
			t.Fatal(err)
		}
		if err := inf.Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

// Until returns once cond holds, checking it now and again at each event
// of w (a watch on what the controller writes, started before the writes
// it waits for), so a test waits for the controller's work itself rather
// than for time. It stops w, and fails t if 10 s pass or w ends first.
func Until(t testing.TB, w watch.Interface, what string, cond func() bool) {
	t.Helper()
	defer w.Stop()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: the watch ended", what)
			}
		case <-timeout:
			t.Fatalf("%s: not within 10s", what)
		}
	}
}
