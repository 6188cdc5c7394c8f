package sim

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/controlplane"
)

// startAPIServer runs Myriad's control plane in-process and returns a
// client config for it.
func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := controlplane.Config{DataDir: t.TempDir(), SecurePort: port, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, cfg, ready) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("control plane exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("control plane not ready after 60 s")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// The writer's requests must be what the typed client's would be, as a
// real API server sees them: the renewal or status is stored, a stale
// resourceVersion is a Conflict and a missing object NotFound (the
// callers' fallbacks rely on both), and the answer decodes.
func TestWireHeartbeatsAgainstAPIServer(t *testing.T) {
	s, err := New(Config{RESTConfig: startAPIServer(t), Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.beats.(*wireHeartbeats)
	if !ok {
		t.Fatalf("New writes heartbeats with %T, want *wireHeartbeats", s.beats)
	}
	ctx := context.Background()
	leases := s.client.CoordinationV1().Leases(LeaseNamespace)
	holder := "n1"
	created, err := leases.Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: LeaseNamespace},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	renewal := created.DeepCopy()
	renewTime := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	renewal.Spec.RenewTime = &renewTime
	got, err := r.updateLease(ctx, renewal)
	if err != nil {
		t.Fatalf("renewal: %v", err)
	}
	if got.Name != "n1" || got.ResourceVersion == created.ResourceVersion || got.Spec.RenewTime == nil || !got.Spec.RenewTime.Equal(&renewTime) {
		t.Fatalf("renewal answered %s rv %s renewTime %v; want n1, a new rv (was %s), %v", got.Name, got.ResourceVersion, got.Spec.RenewTime, created.ResourceVersion, renewTime)
	}
	stored, err := leases.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil || stored.ResourceVersion != got.ResourceVersion || !stored.Spec.RenewTime.Equal(&renewTime) {
		t.Fatalf("stored lease rv %s renewTime %v (%v); want rv %s renewTime %v", stored.ResourceVersion, stored.Spec.RenewTime, err, got.ResourceVersion, renewTime)
	}

	if _, err := r.updateLease(ctx, created.DeepCopy()); !apierrors.IsConflict(err) {
		t.Fatalf("renewal with a stale resourceVersion: %v, want Conflict", err)
	}
	missing := created.DeepCopy()
	missing.Name = "no-such-node"
	if _, err := r.updateLease(ctx, missing); !apierrors.IsNotFound(err) {
		t.Fatalf("renewal of a missing lease: %v, want NotFound", err)
	}

	nodes := s.client.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := node.DeepCopy()
	update.Spec.Unschedulable = true // not the status endpoint's to change
	update.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	gotNode, err := r.updateNodeStatus(ctx, update)
	if err != nil {
		t.Fatalf("status update: %v", err)
	}
	storedNode, err := nodes.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*corev1.Node{gotNode, storedNode} {
		if n.ResourceVersion == node.ResourceVersion || len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Reason != "KubeletReady" || n.Spec.Unschedulable {
			t.Fatalf("status update answered/stored rv %s, conditions %v, unschedulable %v; want a new rv (was %s), Ready, spec unchanged",
				n.ResourceVersion, n.Status.Conditions, n.Spec.Unschedulable, node.ResourceVersion)
		}
	}
	if _, err := r.updateNodeStatus(ctx, node.DeepCopy()); !apierrors.IsConflict(err) {
		t.Fatalf("status update with a stale resourceVersion: %v, want Conflict", err)
	}
	node.Name = "no-such-node"
	if _, err := r.updateNodeStatus(ctx, node); !apierrors.IsNotFound(err) {
		t.Fatalf("status update of a missing node: %v, want NotFound", err)
	}
}

// Like client-go, the writer waits out a 429's Retry-After and tries
// again, and turns a response that is not a Status into a generic error
// with its code.
func TestWireHeartbeatsRetriesAndErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			lease := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7"}}
			lease.SetGroupVersionKind(leaseKind)
			data, err := runtime.Encode(scheme.Codecs.LegacyCodec(coordv1.SchemeGroupVersion), lease)
			if err != nil {
				t.Error(err)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(data)
		default:
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "proxy trouble")
		}
	}))
	defer srv.Close()
	s, err := New(Config{RESTConfig: &rest.Config{Host: srv.URL}, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "6"}}
	got, err := s.beats.updateLease(context.Background(), l)
	if err != nil || got.ResourceVersion != "7" || calls.Load() != 2 {
		t.Fatalf("after a 429: rv %v, err %v, %d calls; want rv 7 after 2 calls", got, err, calls.Load())
	}
	_, err = s.beats.updateLease(context.Background(), l)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusBadGateway || apierrors.ReasonForError(err) != metav1.StatusReasonInternalError {
		t.Fatalf("502 without a Status: %#v, want an InternalError API status with code 502", err)
	}
}
