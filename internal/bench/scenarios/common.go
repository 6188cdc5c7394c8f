package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
// confirm), config maps, services and deployments in namespaces, then
// the namespaces. Best effort: errors are logged.
func cleanupNamespaces(ctx context.Context, env *loadtest.Env, namespaces []string) {
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

// pace calls fn about rate times a second, spread over workers goroutines,
// until ctx ends, the deadline passes or maxCalls calls were started
// (0: no limit). Ticks that find every worker busy are dropped rather than
// queued, so a slow server shows as a lower achieved rate (returned with
// the calls started) instead of a burst later.
func pace(ctx context.Context, rate float64, workers int, deadline time.Time, maxCalls int64,
	fn func(ctx context.Context, worker int, i int64)) (started, dropped int64) {
	// Calls in flight at the deadline finish (with ctx, not loopCtx): a
	// call cut short would count as a failure the server did not cause.
	loopCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
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
	var n, drop atomic.Int64
	start := time.Now()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
loop:
	for {
		select {
		case <-loopCtx.Done():
			break loop
		case <-t.C:
		}
		due := int64(math.Floor(time.Since(start).Seconds() * rate))
		for n.Load()+drop.Load() < due {
			if maxCalls > 0 && n.Load() >= maxCalls {
				break loop
			}
			select {
			case tokens <- n.Load():
				n.Add(1)
			default:
				drop.Add(1)
			}
		}
	}
	close(tokens)
	wg.Wait()
	return n.Load(), drop.Load()
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
