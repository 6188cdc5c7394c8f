package scenarios

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// podTimes is what the bench learned about one pod: when its informer saw
// each step (precise, this machine's clock) and what the pod's own
// timestamps say (server and node clocks, second precision).
type podTimes struct {
	key           string    // namespace/name
	created       time.Time // metadata.creationTimestamp
	firstSeen     time.Time // informer: first event
	scheduledSeen time.Time // informer: first seen with spec.nodeName
	scheduledCond time.Time // PodScheduled condition's lastTransitionTime
	runningSeen   time.Time // informer: first seen Running
	runningStatus time.Time // latest container startedAt (the node's word)
	deletedSeen   time.Time // informer: delete event
}

// podTracker follows the pods matching a selector through an informer and
// timestamps each step of their lives. It counts the informer's list and
// watch calls (relists versus watch resumes in restart-storm).
type podTracker struct {
	informer cache.SharedIndexInformer
	lists    atomic.Int64
	watches  atomic.Int64
	start    time.Time

	mu struct {
		sync.Mutex
		pods                                map[string]*podTimes
		seen, scheduled, running, deleted   int
		seenS, scheduledS, runningS, deletS loadtest.Series
	}
	// cancel (set by run) stops the goroutines run starts; done joins them.
	cancel    context.CancelFunc
	done      sync.WaitGroup
	closeOnce sync.Once
}

// newPodTracker builds (but does not start) a tracker of pods in
// namespace ("" for all) matching labelSelector.
func newPodTracker(c kubernetes.Interface, namespace, labelSelector string, start time.Time) *podTracker {
	t := &podTracker{start: start}
	t.mu.pods = map[string]*podTimes{}
	t.mu.seenS = loadtest.Series{Name: "pods created", Unit: "pods"}
	t.mu.scheduledS = loadtest.Series{Name: "pods scheduled", Unit: "pods"}
	t.mu.runningS = loadtest.Series{Name: "pods running", Unit: "pods"}
	t.mu.deletS = loadtest.Series{Name: "pods deleted", Unit: "pods"}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			t.lists.Add(1)
			o.LabelSelector = labelSelector
			return c.CoreV1().Pods(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			t.watches.Add(1)
			o.LabelSelector = labelSelector
			return c.CoreV1().Pods(namespace).Watch(ctx, o)
		},
	}
	t.informer = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	_, _ = t.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, false) },
		UpdateFunc: func(_, obj any) { t.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			t.observe(obj, true)
		},
	})
	return t
}

// run starts the informer and a sampler of the counts (every 500 ms) and
// waits for the informer's first sync. close stops both; if the informer
// does not sync, run stops them itself.
func (t *podTracker) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	t.sample() // the zero point
	t.done.Add(2)
	go func() {
		defer t.done.Done()
		t.informer.RunWithContext(ctx)
	}()
	go func() {
		defer t.done.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.sample()
			}
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), t.informer.HasSynced) {
		err := ctx.Err()
		t.close()
		return fmt.Errorf("pod informer did not sync: %w", err)
	}
	return nil
}

// close stops the informer and sampler, waits for them and takes one last
// sample. Only the first call does anything.
func (t *podTracker) close() {
	t.closeOnce.Do(func() {
		if t.cancel != nil {
			t.cancel()
		}
		t.done.Wait()
		t.sample()
	})
}

func (t *podTracker) sample() {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := time.Since(t.start).Seconds()
	t.mu.seenS.Points = append(t.mu.seenS.Points, loadtest.Point{T: at, V: float64(t.mu.seen)})
	t.mu.scheduledS.Points = append(t.mu.scheduledS.Points, loadtest.Point{T: at, V: float64(t.mu.scheduled)})
	t.mu.runningS.Points = append(t.mu.runningS.Points, loadtest.Point{T: at, V: float64(t.mu.running)})
	t.mu.deletS.Points = append(t.mu.deletS.Points, loadtest.Point{T: at, V: float64(t.mu.deleted)})
}

func (t *podTracker) observe(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	k := p.Namespace + "/" + p.Name
	pt := t.mu.pods[k]
	if pt == nil {
		pt = &podTimes{key: k, firstSeen: now, created: p.CreationTimestamp.Time}
		t.mu.pods[k] = pt
		t.mu.seen++
	}
	if pt.scheduledSeen.IsZero() && p.Spec.NodeName != "" {
		pt.scheduledSeen = now
		t.mu.scheduled++
	}
	if pt.scheduledCond.IsZero() {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				pt.scheduledCond = c.LastTransitionTime.Time
			}
		}
	}
	if pt.runningSeen.IsZero() && podRunning(p) {
		pt.runningSeen = now
		t.mu.running++
		for _, cs := range p.Status.ContainerStatuses {
			if r := cs.State.Running; r != nil && r.StartedAt.After(pt.runningStatus) {
				pt.runningStatus = r.StartedAt.Time
			}
		}
	}
	if deleted && pt.deletedSeen.IsZero() {
		pt.deletedSeen = now
		t.mu.deleted++
	}
}

// counts returns how many pods were seen, scheduled, running and deleted.
func (t *podTracker) counts() (seen, scheduled, running, deleted int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.seen, t.mu.scheduled, t.mu.running, t.mu.deleted
}

// times returns a copy of a pod's times, if it was seen.
func (t *podTracker) times(namespace, name string) (podTimes, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pt, ok := t.mu.pods[namespace+"/"+name]
	if !ok {
		return podTimes{}, false
	}
	return *pt, true
}

// all returns copies of every pod's times.
func (t *podTracker) all() []podTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]podTimes, 0, len(t.mu.pods))
	for _, pt := range t.mu.pods {
		out = append(out, *pt)
	}
	return out
}

// series returns the count series (created = first seen).
func (t *podTracker) series() []loadtest.Series {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []loadtest.Series
	for _, s := range []loadtest.Series{t.mu.seenS, t.mu.scheduledS, t.mu.runningS, t.mu.deletS} {
		s.Points = append([]loadtest.Point(nil), s.Points...)
		out = append(out, s)
	}
	return out
}
