package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// podTestSim is one hollow node without a pod watch: tests deliver pod
// events themselves. Its startup delay is exactly PodStartupDelay, without
// jitter, so tests can expect a pod Running at a given instant
// (TestPodStartupDelaysVary covers the jitter).
func podTestSim(t *testing.T) (*testSim, *node) {
	t.Helper()
	ts := newTestSim(t, 1, func(c *Config) { c.PodStartupJitter = -1 })
	ts.noPodWatch = true
	ts.run(t)
	return ts, ts.nodes[0]
}

func newPod(name, cpu string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:   "hollow-node-0",
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

// create stores pod in the fake server and hands it to the node, as the
// watch would.
func (ts *testSim) create(t *testing.T, n *node, pod *corev1.Pod) {
	t.Helper()
	got, err := ts.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.onPod(got)
}

func (ts *testSim) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := ts.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func condition(p *corev1.Pod, c corev1.PodConditionType) corev1.ConditionStatus {
	for _, pc := range p.Status.Conditions {
		if pc.Type == c {
			return pc.Status
		}
	}
	return ""
}

func TestPodRunsAfterStartupDelay(t *testing.T) {
	ts, n := podTestSim(t)
	ts.create(t, n, newPod("web", "500m"))
	ts.advance(t, 900*time.Millisecond, 100*time.Millisecond)
	if p := ts.pod(t, "web"); p.Status.Phase != corev1.PodPending {
		t.Fatalf("phase %s before the startup delay, want Pending", p.Status.Phase)
	}
	if st := ts.Stats(); st.PodsStarting != 1 || st.PodsRunning != 0 {
		t.Errorf("starting %d running %d, want 1 0", st.PodsStarting, st.PodsRunning)
	}
	ts.advance(t, 100*time.Millisecond, 100*time.Millisecond)
	p := ts.pod(t, "web")
	checks := []struct {
		what      string
		got, want any
	}{
		{"phase", p.Status.Phase, corev1.PodRunning},
		{"podIP", p.Status.PodIP, "10.0.0.1"},
		{"podIPs", len(p.Status.PodIPs), 1},
		{"hostIP", p.Status.HostIP, "172.16.0.1"},
		{"startTime", p.Status.StartTime != nil && p.Status.StartTime.Time.Equal(t0), true},
		{"qosClass", p.Status.QOSClass, corev1.PodQOSBurstable},
		{"Ready", condition(p, corev1.PodReady), corev1.ConditionTrue},
		{"ContainersReady", condition(p, corev1.ContainersReady), corev1.ConditionTrue},
		{"Initialized", condition(p, corev1.PodInitialized), corev1.ConditionTrue},
		{"PodScheduled", condition(p, corev1.PodScheduled), corev1.ConditionTrue},
		{"PodReadyToStartContainers", condition(p, corev1.PodReadyToStartContainers), corev1.ConditionTrue},
		{"containerStatuses", len(p.Status.ContainerStatuses), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	cs := p.Status.ContainerStatuses[0]
	if !cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil || cs.ContainerID == "" || cs.ImageID == "" {
		t.Errorf("container status %+v: want ready, started, running, with IDs", cs)
	}
	if st := ts.Stats(); st.PodsStarting != 0 || st.PodsRunning != 1 {
		t.Errorf("starting %d running %d, want 0 1", st.PodsStarting, st.PodsRunning)
	}
	// A second pod gets the next address.
	ts.create(t, n, newPod("web2", ""))
	ts.advance(t, time.Second, 100*time.Millisecond)
	if p := ts.pod(t, "web2"); p.Status.PodIP != "10.0.0.2" || p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("second pod IP %q QoS %s, want 10.0.0.2 BestEffort", p.Status.PodIP, p.Status.QOSClass)
	}
}

func TestPodThatDoesNotFitIsRejected(t *testing.T) {
	ts, n := podTestSim(t)
	ts.create(t, n, newPod("a", "20"))
	ts.create(t, n, newPod("b", "20"))
	ts.advance(t, time.Second, 100*time.Millisecond)
	if p := ts.pod(t, "a"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("a: phase %s, want Running", p.Status.Phase)
	}
	p := ts.pod(t, "b")
	wantMsg := "Pod was rejected: Node didn't have enough resource: cpu, requested: 20000, used: 20000, capacity: 32000"
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "OutOfcpu" || p.Status.Message != wantMsg {
		t.Errorf("b: phase %s reason %q message %q, want Failed OutOfcpu %q", p.Status.Phase, p.Status.Reason, p.Status.Message, wantMsg)
	}
	if st := ts.Stats(); st.PodsRejected != 1 || st.PodsRunning != 1 {
		t.Errorf("rejected %d running %d, want 1 1", st.PodsRejected, st.PodsRunning)
	}
}

func TestJobPodsRunToSucceeded(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*corev1.Pod)
		runTime time.Duration
	}{
		{"job owner", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j"}}
		}, 5 * time.Second},
		{"annotation", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationRunSeconds: "2.5"}
		}, 2500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, n := podTestSim(t)
			p := newPod("job", "1")
			tc.setup(p)
			ts.create(t, n, p)
			// Running at 1s (the startup delay), Succeeded its run time later.
			ts.advance(t, time.Second+tc.runTime-100*time.Millisecond, 100*time.Millisecond)
			if got := ts.pod(t, "job").Status.Phase; got != corev1.PodRunning {
				t.Fatalf("phase %s just before the run time, want Running", got)
			}
			ts.advance(t, 100*time.Millisecond, 100*time.Millisecond)
			got := ts.pod(t, "job")
			if got.Status.Phase != corev1.PodSucceeded || condition(got, corev1.PodReady) != corev1.ConditionFalse {
				t.Fatalf("phase %s Ready %s, want Succeeded False", got.Status.Phase, condition(got, corev1.PodReady))
			}
			if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
				t.Errorf("container state %+v, want terminated Completed 0", got.Status.ContainerStatuses[0].State)
			}
			st := ts.Stats()
			if st.PodsSucceeded != 1 || st.PodsRunning != 0 {
				t.Errorf("succeeded %d running %d, want 1 0", st.PodsSucceeded, st.PodsRunning)
			}
			// Its resources are free again: a pod needing the whole node fits.
			ts.create(t, n, newPod("big", "32"))
			ts.advance(t, time.Second, 100*time.Millisecond)
			if got := ts.pod(t, "big").Status.Phase; got != corev1.PodRunning {
				t.Errorf("big pod after the job: %s, want Running", got)
			}
		})
	}
}

func TestGracefulDeletion(t *testing.T) {
	ts, n := podTestSim(t)
	ts.create(t, n, newPod("web", "32"))
	ts.advance(t, time.Second, 100*time.Millisecond)

	p := ts.pod(t, "web")
	now := metav1.NewTime(ts.clock.Now())
	grace := int64(30)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	p, err := ts.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.onPod(p)
	ts.settle(t)
	got := ts.pod(t, "web")
	if term := got.Status.ContainerStatuses[0].State.Terminated; term == nil || condition(got, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("after deletion started: container state %+v Ready %s, want terminated and not ready", got.Status.ContainerStatuses[0].State, condition(got, corev1.PodReady))
	}
	ts.advance(t, 900*time.Millisecond, 100*time.Millisecond)
	if _, err := ts.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("deleted before the termination delay: %v", err)
	}
	ts.advance(t, 100*time.Millisecond, 100*time.Millisecond)
	var del k8stesting.DeleteActionImpl
	for _, a := range ts.client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.Resource.Resource == "pods" {
			del = d
		}
	}
	o := del.DeleteOptions
	if del.Name != "web" || o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != "uid-web" {
		t.Fatalf("delete %q with %+v, want web with grace 0 and UID precondition uid-web", del.Name, o)
	}
	if st := ts.Stats(); st.PodsDeleted != 1 || st.PodsRunning != 0 {
		t.Errorf("deleted %d running %d, want 1 0", st.PodsDeleted, st.PodsRunning)
	}
	// The node's resources are free before the DELETED event even arrives.
	ts.create(t, n, newPod("next", "32"))
	ts.advance(t, time.Second, 100*time.Millisecond)
	if got := ts.pod(t, "next").Status.Phase; got != corev1.PodRunning {
		t.Errorf("pod after the deletion: %s, want Running", got)
	}
}

func TestFailedNodeIgnoresPodsUntilRecovered(t *testing.T) {
	ts, n := podTestSim(t)
	ts.create(t, n, newPod("early", ""))
	if err := ts.Fail(n.name); err != nil {
		t.Fatal(err)
	}
	ts.create(t, n, newPod("late", ""))
	ts.advance(t, 3*time.Second, 100*time.Millisecond)
	for _, name := range []string{"early", "late"} {
		if got := ts.pod(t, name).Status.Phase; got != corev1.PodPending {
			t.Errorf("%s on a failed node: %s, want Pending", name, got)
		}
	}
	if err := ts.Recover(n.name); err != nil {
		t.Fatal(err)
	}
	// The admitted pod resumes; the one sent while failed comes with the
	// relist (here: delivered by hand).
	n.onPod(ts.pod(t, "late"))
	ts.advance(t, time.Second, 100*time.Millisecond)
	for _, name := range []string{"early", "late"} {
		if got := ts.pod(t, name).Status.Phase; got != corev1.PodRunning {
			t.Errorf("%s after recovery: %s, want Running", name, got)
		}
	}
}

func TestSyncListKeepsPodsNewerThanTheList(t *testing.T) {
	ts, n := podTestSim(t)
	p := newPod("web", "1")
	p.ResourceVersion = "10"
	n.onPod(p)
	ts.settle(t)
	tests := []struct {
		listRV string
		kept   bool
	}{
		{"5", true},   // an older list (from the cache) must not delete it
		{"10", false}, // the list has caught up and the pod is not in it
	}
	for _, tc := range tests {
		n.syncList(nil, tc.listRV)
		n.mu.Lock()
		_, kept := n.mu.pods[p.UID]
		n.mu.Unlock()
		if kept != tc.kept {
			t.Errorf("after a list at %s without the pod: kept %v, want %v", tc.listRV, kept, tc.kept)
		}
	}
	if st := ts.Stats(); st.PodsStarting != 0 || st.PodsRunning != 0 {
		t.Errorf("after the pod was forgotten: starting %d running %d, want 0 0", st.PodsStarting, st.PodsRunning)
	}
}

func TestStartupDelayStaysWithinBounds(t *testing.T) {
	const draws = 10000
	tests := []struct {
		name                string
		delay, jitter       time.Duration
		lo, hi              time.Duration
		wantMean, meanSlack time.Duration
	}{
		{"default jitter", time.Second, 200 * time.Millisecond, 800 * time.Millisecond, 1200 * time.Millisecond, time.Second, 10 * time.Millisecond},
		{"no jitter", time.Second, 0, time.Second, time.Second, time.Second, 0},
		{"negative is none", time.Second, -1, time.Second, time.Second, time.Second, 0},
		// A third of the range lies below zero and is clamped there.
		{"clamped at zero", 100 * time.Millisecond, 300 * time.Millisecond, 0, 400 * time.Millisecond, 0, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			lo, hi, sum := time.Duration(1<<62), time.Duration(0), time.Duration(0)
			for range draws {
				d := startupDelay(tc.delay, tc.jitter, rng)
				lo, hi, sum = min(lo, d), max(hi, d), sum+d
			}
			// Uniform over the whole range: both ends are (nearly) reached.
			edge := (tc.hi - tc.lo) / 100
			if lo < tc.lo || lo > tc.lo+edge || hi > tc.hi || hi < tc.hi-edge {
				t.Errorf("delays in [%v, %v], want in [%v, %v] and reaching both ends", lo, hi, tc.lo, tc.hi)
			}
			if mean := sum / draws; mean < tc.wantMean-tc.meanSlack || mean > tc.wantMean+tc.meanSlack {
				t.Errorf("mean delay %v, want %v ± %v", mean, tc.wantMean, tc.meanSlack)
			}
		})
	}
	// The same seed draws the same delays; another seed, others.
	seq := func(seed uint64) string {
		rng := rand.New(rand.NewPCG(seed, 0))
		var out []time.Duration
		for range 5 {
			out = append(out, startupDelay(time.Second, 200*time.Millisecond, rng))
		}
		return fmt.Sprint(out)
	}
	first, again, other := seq(7), seq(7), seq(8)
	if first != again || first == other {
		t.Errorf("seed 7: %s then %s; seed 8: %s; want the first two equal, the third different", first, again, other)
	}
}

// With the default jitter (a fifth of the delay) pods admitted together
// turn Running at different times within delay ± jitter, and exactly when
// the node's generator, seeded with (Seed, node index), says.
func TestPodStartupDelaysVary(t *testing.T) {
	const (
		pods  = 40
		seed  = 42
		delay = time.Second
		step  = 10 * time.Millisecond
	)
	ts := newTestSim(t, 1, func(c *Config) { c.Seed = seed })
	if ts.cfg.PodStartupJitter != delay/5 {
		t.Fatalf("default jitter %v, want %v", ts.cfg.PodStartupJitter, delay/5)
	}
	ts.noPodWatch = true
	running := ts.record("update", "pods")
	ts.run(t)
	n := ts.nodes[0]
	for i := range pods {
		ts.create(t, n, newPod(fmt.Sprintf("p%02d", i), ""))
	}
	ts.advance(t, delay+delay/5+step, step)

	want := rand.New(rand.NewPCG(seed, 0)) // node index 0
	distinct := map[time.Duration]bool{}
	first, last := time.Duration(1<<62), time.Duration(0)
	for i := range pods {
		name := fmt.Sprintf("p%02d", i)
		got := running.get(name)
		if len(got) != 1 {
			t.Fatalf("%s: status writes at %v, want one", name, got)
		}
		at := got[0].Sub(t0)
		// The clock moves in steps, and the scheduler takes work due
		// within its slack early.
		due := startupDelay(delay, delay/5, want)
		if at < due-slack || at >= due+step {
			t.Errorf("%s Running at +%v, want at its drawn delay %v (to the %v step)", name, at, due, step)
		}
		if at < delay-delay/5-slack || at > delay+delay/5+step {
			t.Errorf("%s Running at +%v, outside %v ± %v", name, at, delay, delay/5)
		}
		distinct[at] = true
		first, last = min(first, at), max(last, at)
	}
	// 40 uniform draws over 41 steps land on about 26 different ones.
	if len(distinct) < pods/3 || first > 900*time.Millisecond || last < 1100*time.Millisecond {
		t.Errorf("%d pods turned Running at %d different times between +%v and +%v; want them spread over %v ± %v",
			pods, len(distinct), first, last, delay, delay/5)
	}
}

// TestPodObserverSeesEachStep checks the observer hears a pod's admission
// when the node admits it and its Running status once the server took it,
// on the simulator's clock; a rejected pod and a second event for a known
// pod report nothing. Stats counts the pod work and the status writes.
func TestPodObserverSeesEachStep(t *testing.T) {
	type step struct {
		step PodStep
		name string
		at   time.Time
	}
	var mu sync.Mutex
	var got []step
	ts := newTestSim(t, 1, func(c *Config) {
		c.PodStartupJitter = -1
		c.PodObserver = func(s PodStep, namespace, name string, at time.Time) {
			if namespace != "default" {
				t.Errorf("namespace %q, want default", namespace)
			}
			mu.Lock()
			got = append(got, step{s, name, at})
			mu.Unlock()
		}
	})
	ts.noPodWatch = true
	ts.run(t)
	n := ts.nodes[0]
	ts.create(t, n, newPod("web", "20"))
	ts.create(t, n, newPod("big", "20")) // does not fit beside web: rejected
	n.onPod(ts.pod(t, "web"))            // known already: no second admission
	ts.advance(t, 1500*time.Millisecond, 100*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	want := []step{{PodAdmitted, "web", t0}, {PodRunningWritten, "web", t0.Add(time.Second)}}
	if len(got) != len(want) {
		t.Fatalf("observed %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	st := ts.Stats()
	// Two status writes: web's Running and big's rejection.
	if c := st.PodWrite.Count(); c != 2 {
		t.Errorf("PodWrite counted %d writes, want 2", c)
	}
	if c := st.PodDispatch.Count(); c != 2 {
		t.Errorf("PodDispatch counted %d tasks, want 2", c)
	}
	if st.PodWorkers != 128 || st.PodMaxBusy < 1 || st.PodMaxBusy > st.PodWorkers {
		t.Errorf("PodWorkers %d, PodMaxBusy %d: want 128 and 1..128", st.PodWorkers, st.PodMaxBusy)
	}
}
