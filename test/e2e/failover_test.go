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

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// foNamespace holds the failover test's Deployments. In it only the
// controllers write ReplicaSets and pods (there is no scheduler, kubelet or
// garbage collector), so every such write seen is a controller acting.
const foNamespace = "fo"

// actionLog records when controller writes (ReplicaSet and pod events in
// foNamespace) are seen.
type actionLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *actionLog) add(at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, at)
}

// gap is the longest stretch without an action that overlaps [from, to],
// and when it began and ended: from the old leader's last write to the new
// leader's first when it spans a handover.
func (a *actionLog) gap(from, to time.Time) (worst time.Duration, begin, end time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := append([]time.Time(nil), a.times...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	for i := 1; i < len(ts); i++ {
		if ts[i].Before(from) || ts[i-1].After(to) {
			continue
		}
		if d := ts[i].Sub(ts[i-1]); d > worst {
			worst, begin, end = d, ts[i-1], ts[i]
		}
	}
	return worst, begin, end
}

// around returns the last action before at and the first after it.
func (a *actionLog) around(at time.Time) (before, after time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ts := range a.times {
		if ts.Before(at) && ts.After(before) {
			before = ts
		}
		if !ts.Before(at) && (after.IsZero() || ts.Before(after)) {
			after = ts
		}
	}
	return before, after
}

func (a *actionLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.times)
}

// holderLog records when the controller manager's Lease was first seen
// (through a watch) held by each identity.
type holderLog struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func (h *holderLog) add(holder string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.since[holder]; !ok && holder != "" {
		h.since[holder] = at
	}
}

func (h *holderLog) at(holder string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since[holder]
}

func leaseHolder(t *testing.T, c kubernetes.Interface) string {
	l, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// foStream is the steady load: every tick it creates a Deployment and
// scales an earlier one, each change needing the deployment controller (a
// ReplicaSet created or resized) and then the ReplicaSet controller (pods
// created or deleted) of whichever replica leads. It remembers the replicas
// it last asked of each Deployment.
type foStream struct {
	c    kubernetes.Interface
	tick time.Duration

	mu struct {
		sync.Mutex
		want           map[string]int32
		created, scale int
	}
}

// run drives the stream until stop is done. Requests are not cancelled
// by stop: a change the server applied must be one the stream remembers.
func (s *foStream) run(stop context.Context, t *testing.T) {
	ctx := context.Background()
	deps := s.c.AppsV1().Deployments(foNamespace)
	for i := 0; stop.Err() == nil; i++ {
		name := fmt.Sprintf("fo-%d", i)
		replicas := int32(1 + i%3)
		if _, err := deps.Create(ctx, workloadDeployment(name, replicas, "nginx:1"), metav1.CreateOptions{}); err == nil {
			s.mu.Lock()
			s.mu.want[name] = replicas
			s.mu.created++
			s.mu.Unlock()
		} else {
			t.Errorf("creating %s: %v", name, err)
		}
		// Scale the Deployment created five ticks ago to 0..4, through the
		// scale subresource as kubectl scale does.
		if i >= 5 {
			old := fmt.Sprintf("fo-%d", i-5)
			to := int32((i * 7) % 5)
			sc, err := deps.GetScale(ctx, old, metav1.GetOptions{})
			if err == nil {
				sc.Spec.Replicas = to
				_, err = deps.UpdateScale(ctx, old, sc, metav1.UpdateOptions{})
			}
			switch {
			case err == nil:
				s.mu.Lock()
				s.mu.want[old] = to
				s.mu.scale++
				s.mu.Unlock()
			case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
				t.Errorf("scaling %s: %v", old, err)
			}
		}
		select {
		case <-stop.Done():
		case <-time.After(s.tick):
		}
	}
}

// converged reports whether every Deployment has exactly the pods asked
// of it, through one ReplicaSet of the same size; else what is off.
func (s *foStream) converged(c kubernetes.Interface) (bool, string) {
	ctx := context.Background()
	s.mu.Lock()
	want := make(map[string]int32, len(s.mu.want))
	for k, v := range s.mu.want {
		want[k] = v
	}
	s.mu.Unlock()
	deps, err := c.AppsV1().Deployments(foNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, d := range deps.Items {
		if n, ok := want[d.Name]; !ok || d.Spec.Replicas == nil || *d.Spec.Replicas != n {
			return false, fmt.Sprintf("%s: spec.replicas %v, the stream asked for %d (ok %v)", d.Name, d.Spec.Replicas, n, ok)
		}
	}
	rss, err := c.AppsV1().ReplicaSets(foNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	pods, err := c.CoreV1().Pods(foNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	rsOf := map[string][]appsv1.ReplicaSet{}
	for _, rs := range rss.Items {
		rsOf[rs.Labels["app"]] = append(rsOf[rs.Labels["app"]], rs)
	}
	podsOf := map[string]int32{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			podsOf[p.Labels["app"]]++
		}
	}
	for name, n := range want {
		if got := rsOf[name]; len(got) != 1 || got[0].Spec.Replicas == nil || *got[0].Spec.Replicas != n {
			sizes := make([]int32, len(got))
			for i := range got {
				sizes[i] = *got[i].Spec.Replicas
			}
			return false, fmt.Sprintf("%s: want one ReplicaSet of %d, have ReplicaSets of %v", name, n, sizes)
		}
		if podsOf[name] != n {
			return false, fmt.Sprintf("%s: %d pods, want %d", name, podsOf[name], n)
		}
	}
	return true, ""
}

// TestControllerFailover runs two leader-elected `myriad controllers`
// replicas with the workload controllers under a steady stream of created
// and scaled Deployments, kills the leader gracefully (SIGTERM) and then
// hard (SIGKILL), and measures each time the gap during which no
// controller acted: the longest stretch around the kill with no ReplicaSet
// or pod written, seen through watches.
func TestControllerFailover(t *testing.T) {
	s, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	c := s.protoClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mkNamespace(t, c, foNamespace)

	replica := func(id string) *ctlProc {
		p := startControllerManager(t, s, "--controllers=deployment,replicaset", "--leader-elect", "--identity="+id,
			"--leader-elect-lease-duration="+foLease.String(), "--leader-elect-renew-deadline="+foRenew.String(),
			"--leader-elect-retry-period="+foRetry.String())
		waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.log.String(), "informers started") })
		return p
	}

	// Every controller write is observed through two watches, the
	// handovers through a third.
	actions := &actionLog{}
	holders := &holderLog{since: map[string]time.Time{}}
	watchDone := make(chan struct{})
	var watchers sync.WaitGroup
	observe := func(what string, w watch.Interface, err error, record func(watch.Event)) {
		if err != nil {
			t.Fatal(err)
		}
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			defer w.Stop()
			for {
				select {
				case <-watchDone:
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Errorf("%s watch closed early: the gaps would be wrong", what)
						return
					}
					if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
						record(ev)
					}
				}
			}
		}()
	}
	write := func(watch.Event) { actions.add(time.Now()) }
	rsWatch, err := c.AppsV1().ReplicaSets(foNamespace).Watch(ctx, metav1.ListOptions{})
	observe("ReplicaSet", rsWatch, err, write)
	podWatch, err := c.CoreV1().Pods(foNamespace).Watch(ctx, metav1.ListOptions{})
	observe("pod", podWatch, err, write)
	leaseWatch, err := c.CoordinationV1().Leases("kube-system").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-controller-manager"})
	observe("Lease", leaseWatch, err, func(ev watch.Event) {
		if l, ok := ev.Object.(*coordinationv1.Lease); ok && l.Spec.HolderIdentity != nil {
			holders.add(*l.Spec.HolderIdentity, time.Now())
		}
	})
	defer func() { close(watchDone); watchers.Wait() }()

	// The stream's tick bounds the gaps' resolution: with the stream
	// flowing, some controller write is due at least every tick.
	stream := &foStream{c: s.client(t), tick: 50 * time.Millisecond}
	stream.mu.want = map[string]int32{}
	streamCtx, stopStream := context.WithCancel(ctx)
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		stream.run(streamCtx, t)
	}()
	defer func() { stopStream(); <-streamDone }()

	a := replica("a")
	waitFor(t, 10*time.Second, func() bool { return leaseHolder(t, c) == "a" })
	b := replica("b")
	time.Sleep(2 * time.Second) // steady state, b warm

	// Graceful: SIGTERM the leader; it releases the Lease on the way out.
	killAt := time.Now()
	a.stop(t)
	waitFor(t, 10*time.Second, func() bool { return leaseHolder(t, c) == "b" })
	time.Sleep(2 * time.Second)
	graceful, gBegin, gEnd := actions.gap(killAt.Add(-time.Second), time.Now())

	a2 := replica("a2")
	time.Sleep(2 * time.Second)
	if h := leaseHolder(t, c); h != "b" {
		t.Fatalf("leader changed to %q while b was healthy", h)
	}

	// Crash: SIGKILL the leader; the standby waits out the lease.
	killAt2 := time.Now()
	b.kill()
	waitFor(t, 15*time.Second, func() bool { return leaseHolder(t, c) == "a2" })
	time.Sleep(2 * time.Second)
	crash, cBegin, cEnd := actions.gap(killAt2.Add(-time.Second), time.Now())

	stopStream()
	<-streamDone
	// Nothing was lost across the handovers, and nothing done twice was
	// left standing: every Deployment ends with exactly one ReplicaSet and
	// the pods last asked of it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ok, why := stream.converged(c)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployments not converged 30s after the stream stopped: %s", why)
		}
	}
	a2.stop(t)

	stream.mu.Lock()
	created, scaled := stream.mu.created, stream.mu.scale
	stream.mu.Unlock()
	rel := func(at, kill time.Time) string {
		return fmt.Sprintf("kill%+dms", at.Sub(kill).Milliseconds())
	}
	// The handover itself: the last write before the new leader was seen
	// holding the Lease (the old leader's, unless both wrote at once) and
	// the first after it (the new leader's). The assertions use the
	// longest idle stretch, which contains it unless the stream stalled
	// elsewhere.
	report := func(kind string, kill time.Time, newLeader string, gap time.Duration, begin, end time.Time) {
		took := holders.at(newLeader)
		last, first := actions.around(took)
		t.Logf("%s: Lease held by %s at %s; last write before %s, first after %s (handover gap %v); longest stretch without a write %v (%s to %s)",
			kind, newLeader, rel(took, kill), rel(last, kill), rel(first, kill), first.Sub(last).Round(time.Millisecond),
			gap.Round(time.Millisecond), rel(begin, kill), rel(end, kill))
	}
	t.Logf("load: %d Deployments created and %d scaled (one of each every %v); %d ReplicaSet and pod writes seen; lease %v / renew %v / retry %v",
		created, scaled, stream.tick, actions.count(), foLease, foRenew, foRetry)
	report("graceful (SIGTERM)", killAt, "b", graceful, gBegin, gEnd)
	report("crash (SIGKILL)", killAt2, "a2", crash, cBegin, cEnd)
	if graceful >= 2*time.Second {
		t.Errorf("graceful takeover gap %v, want < 2s", graceful)
	}
	// The bound is lease duration + one retry period (3.5 s here),
	// which every measured run met (docs/bench/controllers.md). client-go's
	// standby retries every retry period jittered by up to 1.2 more
	// (leaderelection.JitterFactor), and counts the lease from when it
	// observed the last renewal, itself up to one such retry late: the
	// worst case is lease + 2 × 2.2 retry periods. The test allows that,
	// plus a quarter second for a loaded CI machine to run the first sync.
	if within := foLease + foRetry; crash >= within {
		t.Logf("crash takeover gap %v is over lease duration + retry period = %v", crash, within)
	}
	if bound := foLease + time.Duration(4.4*float64(foRetry)) + 250*time.Millisecond; crash >= bound {
		t.Errorf("crash takeover gap %v, want < lease duration + two jittered retry periods = %v", crash, bound)
	}
}
