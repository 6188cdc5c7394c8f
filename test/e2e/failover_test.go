package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Leader election timing for the failover test: short, so a crash costs
// seconds, not the default 15 s.
const (
	foLease = 3 * time.Second
	foRenew = 2 * time.Second
	foRetry = 500 * time.Millisecond
)

// actionLog records when controller actions (default ServiceAccounts
// appearing in the stream's namespaces) are seen.
type actionLog struct {
	mu    sync.Mutex
	times []time.Time
	seen  map[string]bool
}

func (a *actionLog) add(ns string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.seen[ns] {
		a.seen[ns] = true
		a.times = append(a.times, at)
	}
}

// gap is the longest stretch without an action between from and to,
// counted from the last action before from.
func (a *actionLog) gap(from, to time.Time) (time.Duration, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := append([]time.Time(nil), a.times...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	var worst time.Duration
	var at time.Time
	for i := 1; i < len(ts); i++ {
		if ts[i].Before(from) || ts[i-1].After(to) {
			continue
		}
		if d := ts[i].Sub(ts[i-1]); d > worst {
			worst, at = d, ts[i-1]
		}
	}
	return worst, at
}

func (a *actionLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.times)
}

func leaseHolder(t *testing.T, c kubernetes.Interface) string {
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestControllerFailover(t *testing.T) {
	s, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	c := s.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	replica := func(id string) *ctlProc {
		p := startControllerManager(t, s, "--controllers=serviceaccount", "--leader-elect", "--identity="+id,
			"--leader-elect-lease-duration="+foLease.String(), "--leader-elect-renew-deadline="+foRenew.String(),
			"--leader-elect-retry-period="+foRetry.String())
		waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.log.String(), "informers started") })
		return p
	}

	// Every action is observed through one watch.
	actions := &actionLog{seen: map[string]bool{}}
	w, err := c.CoreV1().ServiceAccounts("").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			if sa, ok := ev.Object.(*corev1.ServiceAccount); ok && ev.Type == watch.Added && strings.HasPrefix(sa.Namespace, "fo-") {
				actions.add(sa.Namespace, time.Now())
			}
		}
	}()
	// The steady stream: a namespace every 20 ms, each needing a default
	// ServiceAccount from whichever replica leads.
	var created sync.WaitGroup
	streamDone := make(chan struct{})
	nsCount := 0
	go func() {
		defer close(streamDone)
		for i := 0; ctx.Err() == nil; i++ {
			created.Add(1)
			_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fo-%d", i)}}, metav1.CreateOptions{})
			created.Done()
			if err == nil {
				nsCount = i + 1
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	a := replica("a")
	waitFor(t, 10*time.Second, func() bool { return leaseHolder(t, c) == "a" })
	b := replica("b")
	time.Sleep(2 * time.Second) // steady state, b warm

	// Graceful: SIGTERM the leader; it releases the Lease on the way out.
	killAt := time.Now()
	a.stop(t)
	waitFor(t, 10*time.Second, func() bool { return leaseHolder(t, c) == "b" })
	time.Sleep(2 * time.Second)
	graceful, _ := actions.gap(killAt.Add(-time.Second), time.Now())

	a2 := replica("a2")
	time.Sleep(2 * time.Second)
	if h := leaseHolder(t, c); h != "b" {
		t.Fatalf("leader changed to %q while b was healthy", h)
	}

	// Crash: SIGKILL the leader; the standby waits out the lease.
	killAt = time.Now()
	b.kill()
	waitFor(t, 15*time.Second, func() bool { return leaseHolder(t, c) == "a2" })
	time.Sleep(2 * time.Second)
	crash, _ := actions.gap(killAt.Add(-time.Second), time.Now())

	cancel()
	<-streamDone
	created.Wait()
	// No namespace was left without its ServiceAccount.
	waitFor(t, 10*time.Second, func() bool { return actions.count() >= nsCount })
	a2.stop(t)

	// The stream's own rhythm (20 ms plus a create) bounds the resolution.
	t.Logf("failover gaps with lease %v / renew %v / retry %v: graceful (SIGTERM) %v, crash (SIGKILL) %v; %d actions",
		foLease, foRenew, foRetry, graceful.Round(time.Millisecond), crash.Round(time.Millisecond), actions.count())
	if graceful >= 2*time.Second {
		t.Errorf("graceful takeover gap %v, want < 2s", graceful)
	}
	if crash >= foLease+foRetry {
		t.Errorf("crash takeover gap %v, want < lease duration + retry period = %v", crash, foLease+foRetry)
	}
}
