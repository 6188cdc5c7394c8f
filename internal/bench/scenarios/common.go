package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// runID is a short random suffix that keeps one run's objects apart from
// another's on the same server.
func runID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createNamespaces creates n namespaces prefix-0 .. prefix-(n-1).
func createNamespaces(ctx context.Context, c kubernetes.Interface, prefix string, n int) ([]string, error) {
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"myriad-bench": prefix}}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating namespace %s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// cleanupNamespaces deletes the pods (grace 0: there may be no kubelet to
// confirm), config maps, secrets, events, services and deployments in namespaces, then
// the namespaces. Best effort: errors are logged. Nothing with --keep.
func cleanupNamespaces(ctx context.Context, env *loadtest.Env, namespaces []string) {
	if env.Keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	env.Progress.Phase("cleanup", int64(len(namespaces)), time.Time{}, nil)
	defer env.Progress.Add(int64(len(namespaces)))
	c := env.Client
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	for _, ns := range namespaces {
		for what, f := range map[string]func() error{
			"deployments": func() error { return c.AppsV1().Deployments(ns).DeleteCollection(ctx, del, metav1.ListOptions{}) },
			"replicasets": func() error { return c.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, del, metav1.ListOptions{}) },
			"pods":        func() error { return c.CoreV1().Pods(ns).DeleteCollection(ctx, del, metav1.ListOptions{}) },
			"configmaps":  func() error { return c.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, del, metav1.ListOptions{}) },
			"secrets":     func() error { return c.CoreV1().Secrets(ns).DeleteCollection(ctx, del, metav1.ListOptions{}) },
			"events":      func() error { return c.CoreV1().Events(ns).DeleteCollection(ctx, del, metav1.ListOptions{}) },
			"services": func() error {
				l, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				for _, s := range l.Items {
					if err := c.CoreV1().Services(ns).Delete(ctx, s.Name, del); err != nil && !apierrors.IsNotFound(err) {
						return err
					}
				}
				return nil
			},
		} {
			if err := f(); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				env.Log.Warn("cleanup", "namespace", ns, "what", what, "err", err)
			}
		}
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			env.Log.Warn("cleanup", "namespace", ns, "err", err)
		}
	}
}

// prefillWorkers is how many creates a prefill keeps in flight: enough to
// fill 200,000 pods in minutes rather than the hour one at a time takes.
const prefillWorkers = 32

// prefill calls create(ctx, i) for i in [0, n) on prefillWorkers goroutines,
// counting each success in the progress, and returns the first error.
func prefill(ctx context.Context, env *loadtest.Env, n int, create func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(prefillWorkers)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := create(ctx, i); err != nil {
				return fmt.Errorf("prefill: %w", err)
			}
			env.Progress.Add(1)
			return nil
		})
	}
	return g.Wait()
}

// pace calls fn about rate times a second, spread over workers goroutines,
// until ctx ends, the deadline passes or maxCalls calls were started
// (0: no limit). Ticks that find every worker busy are dropped rather than
// queued, so a slow server shows as a lower achieved rate (returned with
// the calls started) instead of a burst later.
func pace(ctx context.Context, rate float64, workers int, deadline time.Time, maxCalls int64,
	fn func(ctx context.Context, worker int, i int64)) (started, dropped int64) {
	return paceOn(ctx, clock.RealClock{}, rate, workers, deadline, maxCalls, fn)
}

// paceInterval is how often pace starts the calls that came due.
const paceInterval = 10 * time.Millisecond

// paceOn is pace on clk's time. Calls in flight at the deadline finish
// (with ctx): a call cut short would count as a failure the server did not
// cause.
func paceOn(ctx context.Context, clk clock.WithTicker, rate float64, workers int, deadline time.Time, maxCalls int64,
	fn func(ctx context.Context, worker int, i int64)) (started, dropped int64) {
	tokens := make(chan int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tokens {
				fn(ctx, w, i)
			}
		}()
	}
	defer func() {
		close(tokens)
		wg.Wait()
	}()
	start := clk.Now()
	end := clk.NewTimer(deadline.Sub(start))
	defer end.Stop()
	tick := clk.NewTicker(paceInterval)
	defer tick.Stop()
	// issue starts (or drops) the calls due by now; false once maxCalls
	// have started.
	issue := func(now time.Time) bool {
		if now.After(deadline) {
			now = deadline
		}
		due := int64(math.Floor(now.Sub(start).Seconds() * rate))
		for started+dropped < due && (maxCalls <= 0 || started < maxCalls) {
			select {
			case tokens <- started:
				started++
			default:
				dropped++
			}
		}
		return maxCalls <= 0 || started < maxCalls
	}
	for {
		select {
		case <-ctx.Done():
			return started, dropped
		case <-end.C():
			// The calls due by the deadline start, whether or not the
			// last tick came first.
			issue(deadline)
			return started, dropped
		case <-tick.C():
			if !issue(clk.Now()) {
				return started, dropped
			}
		}
	}
}

// itoa is strconv.Itoa, short for params.
func itoa(n int) string { return strconv.Itoa(n) }

// ftoa formats a float param.
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// podRunning reports whether p's phase is Running.
func podRunning(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// key builds a loadtest.Key.
func key(verb, resource, scope string) loadtest.Key {
	return loadtest.Key{Verb: verb, Resource: resource, Scope: scope}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
