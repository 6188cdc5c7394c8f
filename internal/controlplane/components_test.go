package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/leaderelect"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestComponentsUseLoopbackAndStopFirst checks that an in-process component
// reaches the API through the loopback config and that, at shutdown, it is
// stopped while the server still answers (so it can release its lease).
func TestComponentsUseLoopbackAndStopFirst(t *testing.T) {
	started := make(chan error, 1)
	finalCall := make(chan error, 1)
	comp := Component{Name: "probe", Identity: pki.Identity{User: "probe", Groups: []string{"system:masters"}}, Run: func(ctx context.Context, loopback *rest.Config, _ prometheus.Registerer, _ informers.SharedInformerFactory) error {
		c, err := kubernetes.NewForConfig(loopback)
		if err != nil {
			return err
		}
		_, err = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		started <- err
		<-ctx.Done()
		// What a leader does on its way out: write (release its Lease),
		// then read consistently — which waits until the cache has seen
		// every write, so the caches must still be running.
		callCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "released", Namespace: "kube-system"}}
		if _, err = c.CoreV1().ConfigMaps("kube-system").Create(callCtx, cm, metav1.CreateOptions{}); err == nil {
			_, err = c.CoreV1().Namespaces().Get(callCtx, "kube-system", metav1.GetOptions{})
		}
		finalCall <- err
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{DataDir: t.TempDir(), SecurePort: freePort(t), Components: []Component{comp}}, nil)
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("component's first call: %v", err)
		}
	case err := <-done:
		t.Fatalf("Run ended early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("component did not start")
	}
	cancel()
	if err := <-finalCall; err != nil {
		t.Errorf("call made while stopping failed, the server went first: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestComponentFailureEndsRun: a failing component ends the process with
// its error, as a crashed scheduler process would.
func TestComponentFailureEndsRun(t *testing.T) {
	boom := errors.New("boom")
	comp := Component{Name: "crasher", Identity: pki.Identity{User: "crasher"}, Run: func(context.Context, *rest.Config, prometheus.Registerer, informers.SharedInformerFactory) error {
		return boom
	}}
	err := Run(context.Background(), Config{DataDir: t.TempDir(), SecurePort: freePort(t), Components: []Component{comp}}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the component's error", err)
	}
}

// TestComponentWithoutIdentity: a component must say who it is; it never
// falls back to the admin's credentials.
func TestComponentWithoutIdentity(t *testing.T) {
	comp := Component{Name: "anonymous", Run: func(context.Context, *rest.Config, prometheus.Registerer, informers.SharedInformerFactory) error {
		return nil
	}}
	err := Run(context.Background(), Config{DataDir: t.TempDir(), SecurePort: freePort(t), Components: []Component{comp}}, nil)
	if err == nil {
		t.Fatal("Run with a component without identity: want an error")
	}
}

// TestComponentLosingLeaseStandsByAgain: a component whose leader Lease is
// lost runs again (and stands by) instead of ending the control plane.
func TestComponentLosingLeaseStandsByAgain(t *testing.T) {
	calls := make(chan int, 3)
	n := 0
	comp := Component{Name: "leader", Identity: pki.Identity{User: "leader"}, Run: func(ctx context.Context, _ *rest.Config, _ prometheus.Registerer, _ informers.SharedInformerFactory) error {
		n++
		calls <- n
		if n < 3 {
			return fmt.Errorf("renewing: %w", leaderelect.ErrLeaseLost)
		}
		<-ctx.Done()
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{DataDir: t.TempDir(), SecurePort: freePort(t), Components: []Component{comp}}, nil)
	}()
	for want := 1; want <= 3; want++ {
		select {
		case got := <-calls:
			if got != want {
				t.Fatalf("call %d, want %d", got, want)
			}
		case err := <-done:
			t.Fatalf("Run ended after the component lost its lease: %v", err)
		case <-time.After(60 * time.Second):
			t.Fatalf("component not run a %d. time", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
