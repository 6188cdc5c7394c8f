package sim

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podPhase is where a pod is in its hollow node's lifecycle.
type podPhase int

const (
	podStarting    podPhase = iota // admitted, waiting for its startup delay
	podRunning                     // status Running written
	podTerminating                 // deletion seen; containers being stopped
	podDone                        // terminal, rejected, or terminated: holds no resources
)

// podState is what a node knows about one of its pods. The node's lock
// guards it.
type podState struct {
	pod   *corev1.Pod // newest version seen (watch or own write)
	phase podPhase
	use   usage // held while phase is starting, running or terminating
	ip    string
	start time.Time // status.startTime: admission
	// runningAt is when the Running status was written; a run-to-completion
	// pod finishes its run time after it.
	runningAt time.Time
	// completing is set once the Succeeded status is scheduled.
	completing bool
	// gen changes whenever the pod's next action is (re)decided; scheduled
	// work carrying an older gen is stale and does nothing.
	gen int
	// confirming is set once the grace-0 delete is scheduled.
	confirming bool
}

func (st *podState) holdsResources() bool { return st.phase != podDone }

// setPhaseLocked moves st to phase, keeping counters and the node's usage
// and IP pool right. n.mu must be held.
func (n *node) setPhaseLocked(st *podState, phase podPhase) {
	c := &n.s.counters
	switch st.phase {
	case podStarting:
		c.podsStarting.Add(-1)
	case podRunning:
		c.podsRunning.Add(-1)
	}
	if st.holdsResources() && phase == podDone {
		n.mu.used = n.mu.used.sub(st.use)
		if st.ip != "" {
			n.mu.ips.release(st.ip)
		}
	}
	st.phase = phase
	st.gen++
	switch phase {
	case podStarting:
		c.podsStarting.Add(1)
	case podRunning:
		c.podsRunning.Add(1)
	}
}

// newer reports whether pod is at least as new as old, by resourceVersion
// (an integer on every server this talks to; if not, trust the newcomer).
func newer(pod, old *corev1.Pod) bool {
	a, errA := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	b, errB := strconv.ParseUint(old.ResourceVersion, 10, 64)
	return errA != nil || errB != nil || a >= b
}

// isJobPod reports whether pod runs to completion, and for how long.
func (n *node) runTime(pod *corev1.Pod) (time.Duration, bool) {
	if v, ok := pod.Annotations[AnnotationRunSeconds]; ok {
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
			return time.Duration(secs * float64(time.Second)), true
		}
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "Job" && (o.APIVersion == "batch/v1" || o.APIVersion == "batch/v1beta1") {
			return n.s.cfg.JobRunTime, true
		}
	}
	return 0, false
}

func (n *node) allocatable() usage {
	cfg := &n.s.cfg
	return usage{milliCPU: cfg.CPU.MilliValue(), memory: cfg.Memory.Value(), pods: int64(cfg.Pods)}
}

// onPod handles an added or modified pod bound to this node.
func (n *node) onPod(pod *corev1.Pod) {
	pod.ManagedFields = nil // unused here; see doc.go, Memory
	admitted := n.onPodLocked(pod)
	if obs := n.s.cfg.PodObserver; obs != nil && !admitted.IsZero() {
		obs(PodAdmitted, pod.Namespace, pod.Name, admitted)
	}
}

// onPodLocked is onPod under the node's lock; it returns when the pod was
// admitted, if this event admitted it (zero otherwise).
func (n *node) onPodLocked(pod *corev1.Pod) (admitted time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.failed {
		return time.Time{}
	}
	st, known := n.mu.pods[pod.UID]
	if known {
		if newer(pod, st.pod) {
			st.pod = pod
		}
		n.advanceLocked(st)
		return time.Time{}
	}
	st = &podState{pod: pod, phase: podDone}
	n.mu.pods[pod.UID] = st
	n.s.pods.add(n, pod)
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		// Finished before we saw it (a previous run); holds nothing.
	case pod.DeletionTimestamp != nil:
		// Deleted before it ever started here: nothing to stop.
	case pod.Status.Phase == corev1.PodRunning && n.mu.ips.claim(pod.Status.PodIP):
		// Running from a previous run of the simulator: adopt it.
		st.ip, st.use = pod.Status.PodIP, podUsage(pod)
		st.start = n.s.cfg.Clock.Now()
		if pod.Status.StartTime != nil {
			st.start = pod.Status.StartTime.Time
		}
		st.runningAt = st.start
		n.mu.used = n.mu.used.add(st.use)
		st.phase = podRunning // setPhaseLocked would count a transition from podDone
		n.s.counters.podsRunning.Add(1)
	default:
		if n.admitLocked(st) {
			return st.start
		}
		return time.Time{}
	}
	n.advanceLocked(st)
	return time.Time{}
}

// admitLocked runs kubelet admission for a new pod and schedules its start
// or its rejection; it reports whether the pod was admitted.
func (n *node) admitLocked(st *podState) bool {
	want := podUsage(st.pod)
	if reason, msg := admit(want, n.mu.used, n.allocatable()); reason != "" {
		st.gen++
		n.schedulePod(n.s.cfg.Clock.Now(), st, func(ctx context.Context, pod *corev1.Pod) (bool, error) {
			ok, err := n.writePodStatus(ctx, pod, func(p *corev1.Pod) { setRejected(p, reason, msg) })
			if ok {
				n.s.counters.podsRejected.Add(1)
				n.s.metrics.podTransition("Rejected")
			}
			return false, err
		})
		return false
	}
	ip, err := n.mu.ips.allocate()
	if err != nil {
		// Admission counts pods, so the pool cannot run dry unless pods were
		// adopted from a run with more pods per node.
		n.s.cfg.Logger.Error("no pod IP", "node", n.name, "pod", st.pod.Namespace+"/"+st.pod.Name, "err", err)
		return false
	}
	st.ip, st.use = ip, want
	n.mu.used = n.mu.used.add(want)
	st.start = n.s.cfg.Clock.Now()
	st.phase = podDone // so setPhaseLocked counts the move into starting
	n.setPhaseLocked(st, podStarting)
	n.scheduleStartLocked(st)
	return true
}

func (n *node) scheduleStartLocked(st *podState) {
	cfg := &n.s.cfg
	delay := startupDelay(cfg.PodStartupDelay, cfg.PodStartupJitter, n.mu.rng)
	n.schedulePod(n.s.cfg.Clock.Now().Add(delay), st, n.startPod)
}

// startupDelay draws a pod's startup delay uniformly from
// [delay-jitter, delay+jitter], clamped at 0; jitter <= 0 means none.
func startupDelay(delay, jitter time.Duration, rng *rand.Rand) time.Duration {
	if jitter > 0 {
		delay += time.Duration(rng.Int64N(int64(2*jitter)+1)) - jitter
	}
	return max(delay, 0)
}

// advanceLocked decides what a known pod needs next after a change: a
// deletion to honour, or a terminal phase someone else set.
func (n *node) advanceLocked(st *podState) {
	pod := st.pod
	if pod.DeletionTimestamp != nil {
		switch st.phase {
		case podStarting:
			// Never started: nothing to stop, confirm at once.
			n.setPhaseLocked(st, podDone)
			n.scheduleConfirmLocked(st, 0)
		case podRunning:
			n.setPhaseLocked(st, podTerminating)
			n.schedulePod(n.s.cfg.Clock.Now(), st, n.stopPod)
		case podDone:
			n.scheduleConfirmLocked(st, 0)
		}
		return
	}
	if (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) && st.phase != podDone {
		n.setPhaseLocked(st, podDone)
		return
	}
	if st.phase == podRunning {
		if run, ok := n.runTime(pod); ok && !st.completing {
			n.scheduleCompleteLocked(st, run)
		}
	}
}

// resumeLocked reschedules a pod's next action after its node recovered
// (work scheduled while it was failed was dropped).
func (n *node) resumeLocked(st *podState) {
	switch st.phase {
	case podStarting:
		st.gen++
		n.scheduleStartLocked(st)
	case podTerminating:
		st.gen++
		n.schedulePod(n.s.cfg.Clock.Now(), st, n.stopPod)
	default:
		st.confirming, st.completing = false, false
		n.advanceLocked(st)
	}
}

// scheduleCompleteLocked schedules a run-to-completion pod's Succeeded
// status, run after it started running.
func (n *node) scheduleCompleteLocked(st *podState, run time.Duration) {
	st.gen++
	st.completing = true
	gen := st.gen
	n.schedulePod(st.runningAt.Add(run), st, func(ctx context.Context, pod *corev1.Pod) (bool, error) {
		ok, err := n.writePodStatus(ctx, pod, func(p *corev1.Pod) {
			setTerminated(p, corev1.PodSucceeded, "PodCompleted", n.s.cfg.Clock.Now())
		})
		if !ok {
			return false, err
		}
		n.s.counters.podsSucceeded.Add(1)
		n.s.metrics.podTransition("Succeeded")
		n.mu.Lock()
		defer n.mu.Unlock()
		if st, ok := n.mu.pods[pod.UID]; ok && st.gen == gen {
			n.setPhaseLocked(st, podDone)
		}
		return true, nil
	})
}

// scheduleConfirmLocked schedules the grace-0 delete that tells the API
// server the pod's containers are gone.
func (n *node) scheduleConfirmLocked(st *podState, after time.Duration) {
	if st.confirming {
		return
	}
	st.confirming = true
	uid := st.pod.UID
	ns, name := st.pod.Namespace, st.pod.Name
	n.s.podWork.at(n.s.cfg.Clock.Now().Add(after), func(time.Time) {
		ctx := n.runCtx()
		n.mu.Lock()
		_, still := n.mu.pods[uid]
		failed := n.mu.failed
		if still && failed {
			n.mu.pods[uid].confirming = false // resumed on recovery
		}
		n.mu.Unlock()
		if !still || failed || ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		zero := int64(0)
		err := n.s.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		switch {
		case err == nil:
			n.s.counters.podsDeleted.Add(1)
			n.s.metrics.podTransition("Deleted")
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already, or a new pod took the name.
		default:
			n.s.counters.podUpdateErrors.Add(1)
			n.mu.Lock()
			if st, ok := n.mu.pods[uid]; ok {
				st.confirming = false
				n.scheduleConfirmLocked(st, time.Second)
			}
			n.mu.Unlock()
		}
	})
}

// podAction is one write for a pod; it returns whether the pod moved on
// (so its state may change) and the write's error.
type podAction func(ctx context.Context, pod *corev1.Pod) (bool, error)

// schedulePod runs act for st at due on the pod worker pool, if st is still
// at the same gen then and its node has not failed. A failed write is
// retried a second later.
func (n *node) schedulePod(due time.Time, st *podState, act podAction) {
	gen, uid := st.gen, st.pod.UID
	n.s.podWork.at(due, func(time.Time) {
		ctx := n.runCtx()
		if ctx.Err() != nil {
			return
		}
		n.mu.Lock()
		cur, ok := n.mu.pods[uid]
		if !ok || cur.gen != gen || n.mu.failed {
			n.mu.Unlock()
			return
		}
		pod := cur.pod.DeepCopy()
		n.mu.Unlock()

		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := act(ctx, pod); err != nil && !apierrors.IsNotFound(err) && n.runCtx().Err() == nil {
			n.s.counters.podUpdateErrors.Add(1)
			n.s.cfg.Logger.Debug("pod update failed", "node", n.name, "pod", pod.Namespace+"/"+pod.Name, "err", err)
			n.mu.Lock()
			if cur, ok := n.mu.pods[uid]; ok && cur.gen == gen {
				n.schedulePod(n.s.cfg.Clock.Now().Add(time.Second), cur, act)
			}
			n.mu.Unlock()
		}
	})
}

// writePodStatus applies mutate to pod's status and writes it, once more
// on a fresh copy after a conflict. On success it records the written pod
// as the newest version.
func (n *node) writePodStatus(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.Pod)) (bool, error) {
	pods := n.s.client.CoreV1().Pods(pod.Namespace)
	mutate(pod)
	began := n.s.cfg.Clock.Now()
	got, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	n.s.podWrites.observe(n.s.cfg.Clock.Since(began))
	if apierrors.IsConflict(err) {
		var fresh *corev1.Pod
		if fresh, err = pods.Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
			if fresh.UID != pod.UID {
				return false, apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
			}
			if fresh.DeletionTimestamp != nil && pod.DeletionTimestamp == nil {
				// Deleted meanwhile; the watch brings the deletion.
				return false, nil
			}
			mutate(fresh)
			got, err = pods.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return false, err
	}
	got.ManagedFields = nil // unused here; see doc.go, Memory
	n.mu.Lock()
	if st, ok := n.mu.pods[got.UID]; ok && newer(got, st.pod) {
		st.pod = got
	}
	n.mu.Unlock()
	return true, nil
}

// startPod writes Running status once the startup delay has passed.
func (n *node) startPod(ctx context.Context, pod *corev1.Pod) (bool, error) {
	uid := pod.UID
	n.mu.Lock()
	st := n.mu.pods[uid]
	ip, start, gen := st.ip, st.start, st.gen
	n.mu.Unlock()
	ok, err := n.writePodStatus(ctx, pod, func(p *corev1.Pod) {
		setRunning(p, ip, n.hostIP, start, n.s.cfg.Clock.Now())
	})
	if !ok {
		return false, err
	}
	if obs := n.s.cfg.PodObserver; obs != nil {
		obs(PodRunningWritten, pod.Namespace, pod.Name, n.s.cfg.Clock.Now())
	}
	n.s.metrics.podTransition("Running")
	n.mu.Lock()
	defer n.mu.Unlock()
	if st, ok := n.mu.pods[uid]; ok && st.gen == gen && st.phase == podStarting {
		st.runningAt = n.s.cfg.Clock.Now()
		n.setPhaseLocked(st, podRunning)
		n.advanceLocked(st)
	}
	return true, nil
}

// stopPod reports the containers of a pod being deleted terminated, then
// schedules the grace-0 delete after TerminationDelay (at most the pod's
// grace period).
func (n *node) stopPod(ctx context.Context, pod *corev1.Pod) (bool, error) {
	ok, err := n.writePodStatus(ctx, pod, func(p *corev1.Pod) {
		setTerminated(p, "", "", n.s.cfg.Clock.Now())
	})
	if !ok && err != nil {
		return false, err
	}
	delay := n.s.cfg.TerminationDelay
	if g := pod.DeletionGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < delay {
		delay = time.Duration(*g) * time.Second
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if st, ok := n.mu.pods[pod.UID]; ok && st.phase == podTerminating {
		n.setPhaseLocked(st, podDone)
		n.scheduleConfirmLocked(st, delay)
	}
	return true, nil
}

// onPodDeleted forgets a pod the API server no longer has.
func (n *node) onPodDeleted(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, ok := n.mu.pods[uid]
	if !ok {
		return
	}
	n.setPhaseLocked(st, podDone)
	delete(n.mu.pods, uid)
	n.s.pods.remove(st.pod)
}

// syncList reconciles the node's pods with a full list at resourceVersion
// listRV: new and changed pods are handled as events, pods missing from the
// list as deletions — unless the node has seen them at a newer version than
// the list (a list served from the cache may be older than the watch).
func (n *node) syncList(pods []corev1.Pod, listRV string) {
	seen := make(map[types.UID]bool, len(pods))
	for i := range pods {
		seen[pods[i].UID] = true
		n.onPod(&pods[i])
	}
	list := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: listRV}}
	n.mu.Lock()
	var gone []types.UID
	for uid, st := range n.mu.pods {
		if !seen[uid] && (listRV == "" || newer(list, st.pod)) {
			gone = append(gone, uid)
		}
	}
	n.mu.Unlock()
	for _, uid := range gone {
		n.onPodDeleted(uid)
	}
}
