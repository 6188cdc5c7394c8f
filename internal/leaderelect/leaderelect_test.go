package leaderelect

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func config(client *fake.Clientset, id string, lease, renew, retry time.Duration) Config {
	return Config{Client: client, Namespace: "kube-system", Name: "test", Identity: id,
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, Logger: slog.New(slog.DiscardHandler)}
}

// candidate runs one replica; leading is closed when it starts leading,
// done when Run returned (err holds what it returned).
type candidate struct {
	cancel  context.CancelFunc
	leading chan struct{}
	done    chan struct{}
	err     error
}

func start(cfg Config) *candidate {
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{cancel: cancel, leading: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = Run(ctx, cfg, func(ctx context.Context) {
			close(c.leading)
			<-ctx.Done()
		})
	}()
	return c
}

func waitFor(t *testing.T, ch <-chan struct{}, within time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(within):
		t.Fatalf("%s: not within %v", what, within)
	}
}

// TestReleaseHandsOverAtOnce: a standby takes over the moment the leader
// releases the Lease, long before its RetryPeriod would have it try.
func TestReleaseHandsOverAtOnce(t *testing.T) {
	client, watches := newClient(t)
	// A standby polling alone would try again only after 20 s.
	a := start(config(client, "a", time.Minute, 40*time.Second, 20*time.Second))
	waitFor(t, a.leading, 10*time.Second, "a leads")
	waitFor(t, watches, 10*time.Second, "a watches the Lease")
	b := start(config(client, "b", time.Minute, 40*time.Second, 20*time.Second))
	defer func() { b.cancel(); <-b.done }()
	// The fake replays no events missed between a list and its watch, as
	// an API server would from the list's resourceVersion: release only
	// once b watches.
	waitFor(t, watches, 10*time.Second, "b watches the Lease")
	a.cancel()
	waitFor(t, a.done, 10*time.Second, "a returns")
	if a.err != nil {
		t.Fatalf("a returned %v after its context ended, want nil", a.err)
	}
	waitFor(t, b.leading, 10*time.Second, "b leads after a's release")
}

// TestExpiredLeaseIsTakenOver: a leader whose renewals fail loses the
// Lease to the standby and returns ErrLeaseLost. (With these timings the
// watch's takeover at LeaseDuration and client-go's own retry come close
// together; the test checks the outcome, not which came first.)
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	client, _ := newClient(t)
	// Once crashed, a's renewals fail and it releases nothing. (The
	// reactor goes in before any client runs: the fake's reactor chain is
	// not safe to change while in use.)
	var crashed atomic.Bool
	defer crashed.Store(false)
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		l, ok := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if ok && crashed.Load() && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "a" && leader(client) == "a" {
			return true, nil, errors.New("a is gone")
		}
		return false, nil, nil
	})
	a := start(config(client, "a", 2*time.Second, time.Second, 500*time.Millisecond))
	waitFor(t, a.leading, 10*time.Second, "a leads")
	b := start(config(client, "b", 2*time.Second, time.Second, 500*time.Millisecond))
	defer func() { b.cancel(); <-b.done }()
	crashed.Store(true)
	waitFor(t, b.leading, 20*time.Second, "b takes over a's expired lease")
	waitFor(t, a.done, 20*time.Second, "a gives up")
	if !errors.Is(a.err, ErrLeaseLost) {
		t.Fatalf("a returned %v, want ErrLeaseLost", a.err)
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{}, false},
		{"lease not above renew", Config{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, true},
		{"renew not above retry", Config{RenewDeadline: time.Second, RetryPeriod: time.Second}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.WithDefaults()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (got.LeaseDuration != 15*time.Second || got.RenewDeadline != 10*time.Second || got.RetryPeriod != 2*time.Second || got.Logger == nil) {
				t.Fatalf("defaults %+v", got)
			}
		})
	}
}

// leader is the Lease's holder as stored.
func leader(client *fake.Clientset) string {
	l, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), "kube-system", "test", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	if h := l.(*coordinationv1.Lease).Spec.HolderIdentity; h != nil {
		return *h
	}
	return ""
}

// newClient returns a fake clientset that, as an API server, gives every
// write of a Lease a new resourceVersion (the elector tells renewals from
// relists by it), and a channel signalling each Lease watch it starts
// serving. Reactors are installed here, before any client runs: the
// fake's reactor chain is not safe to change while in use.
func newClient(t *testing.T) (*fake.Clientset, <-chan struct{}) {
	t.Helper()
	client := fake.NewClientset()
	var rv atomic.Int64
	for _, verb := range []string{"create", "update"} {
		client.PrependReactor(verb, "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
			if l, ok := action.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease); ok {
				l.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
			}
			return false, nil, nil // on to the tracker
		})
	}
	ch := make(chan struct{}, 100)
	client.PrependWatchReactor("leases", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		ch <- struct{}{}
		return true, w, nil
	})
	return client, ch
}
