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

// The renewer's request must be what the typed client's would be, as a
// real API server sees it: the renewal is stored, a stale resourceVersion
// is a Conflict and a missing Lease NotFound (renew's fallbacks rely on
// both), and the answer decodes.
func TestLeaseRenewerAgainstAPIServer(t *testing.T) {
	s, err := New(Config{RESTConfig: startAPIServer(t), Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.leases.(*leaseRenewer)
	if !ok {
		t.Fatalf("New renews with %T, want *leaseRenewer", s.leases)
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
	got, err := r.update(ctx, renewal)
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

	if _, err := r.update(ctx, created.DeepCopy()); !apierrors.IsConflict(err) {
		t.Fatalf("renewal with a stale resourceVersion: %v, want Conflict", err)
	}
	missing := created.DeepCopy()
	missing.Name = "no-such-node"
	if _, err := r.update(ctx, missing); !apierrors.IsNotFound(err) {
		t.Fatalf("renewal of a missing lease: %v, want NotFound", err)
	}
}

// Like client-go, the renewer waits out a 429's Retry-After and tries
// again, and turns a response that is not a Status into a generic error
// with its code.
func TestLeaseRenewerRetriesAndErrors(t *testing.T) {
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
	got, err := s.leases.update(context.Background(), l)
	if err != nil || got.ResourceVersion != "7" || calls.Load() != 2 {
		t.Fatalf("after a 429: rv %v, err %v, %d calls; want rv 7 after 2 calls", got, err, calls.Load())
	}
	_, err = s.leases.update(context.Background(), l)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusBadGateway || apierrors.ReasonForError(err) != metav1.StatusReasonInternalError {
		t.Fatalf("502 without a Status: %#v, want an InternalError API status with code 502", err)
	}
}
