package scenarios

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// The list flood is the measurement of flow control: one
// ServiceAccount runs ParallelLists full LISTs of ListConfigMaps
// ConfigMaps of ConfigMapBytes each, back to back, while another
// ServiceAccount creates and gets ConfigMaps at ProbeRate. Both are
// ordinary identities — the bench's admin credentials are in
// system:masters, which flow control exempts — and both clients are
// client-go with its defaults for 429 (it retries after Retry-After).
// With DrainLists the greedy client reads each answer without decoding
// it (drainList).

// floodSetup is what the flood phase runs with.
type floodSetup struct {
	greedy, polite kubernetes.Interface
	floodNS        string
	politeNS       string
}

// setupFlood creates the ConfigMaps and the two ServiceAccounts with
// their rights (view in the flood namespace; edit in their own) and
// returns clients acting as them.
func (c GreedyClients) setupFlood(ctx context.Context, env *loadtest.Env, floodNS, politeNS string) (*floodSetup, error) {
	payload := strings.Repeat("x", c.ConfigMapBytes)
	env.Progress.Phase("prefill configmaps", int64(c.ListConfigMaps), time.Time{}, nil)
	if err := prefill(ctx, env, c.ListConfigMaps, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"payload": payload}}
		_, err := env.Client.CoreV1().ConfigMaps(floodNS).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	greedy, err := serviceAccountClient(ctx, env, floodNS, "greedy", "view")
	if err != nil {
		return nil, err
	}
	polite, err := serviceAccountClient(ctx, env, politeNS, "polite", "edit")
	if err != nil {
		return nil, err
	}
	return &floodSetup{greedy: greedy, polite: polite, floodNS: floodNS, politeNS: politeNS}, nil
}

// serviceAccountClient makes ServiceAccount ns/name, binds it to
// clusterRole in ns, and returns a JSON client with its token and no
// client-side rate limit (a flood is what is being measured).
func serviceAccountClient(ctx context.Context, env *loadtest.Env, ns, name, clusterRole string) (kubernetes.Interface, error) {
	return newServiceAccountClient(ctx, env, ns, name, func(subject rbacv1.Subject) error {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{subject},
		}
		_, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
		return err
	})
}

// clusterServiceAccountClient is serviceAccountClient with clusterRole
// bound cluster-wide, by a ClusterRoleBinding called name (delete it with
// deleteClusterRoleBindings).
func clusterServiceAccountClient(ctx context.Context, env *loadtest.Env, ns, name, clusterRole string) (kubernetes.Interface, error) {
	return newServiceAccountClient(ctx, env, ns, name, func(subject rbacv1.Subject) error {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{subject},
		}
		_, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
		return err
	})
}

func deleteClusterRoleBindings(ctx context.Context, env *loadtest.Env, names ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, n := range names {
		if err := env.Client.RbacV1().ClusterRoleBindings().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			env.Log.Warn("deleting cluster role binding", "name", n, "err", err)
		}
	}
}

func newServiceAccountClient(ctx context.Context, env *loadtest.Env, ns, name string, bind func(rbacv1.Subject) error) (kubernetes.Interface, error) {
	c := env.Client
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating service account %s/%s: %w", ns, name, err)
	}
	if err := bind(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}); err != nil {
		return nil, fmt.Errorf("binding service account %s/%s: %w", ns, name, err)
	}
	exp := int64(3600)
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", ns, name, err)
	}
	cfg := rest.AnonymousClientConfig(env.RESTConfig)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = 1e6, 1e6
	cfg.ContentType = "application/json"
	cfg.UserAgent = "myriad-bench/" + name
	return kubernetes.NewForConfig(cfg)
}

// floodPhase runs the polite client's create+get probe for the phase
// length, with the greedy client's ParallelLists list loops when flood is
// set. It returns the greedy lists completed.
func (c GreedyClients) floodPhase(ctx context.Context, env *loadtest.Env, f *floodSetup, flood bool,
	observe func(loadtest.Key, func() error), record func(loadtest.Key, time.Duration, error)) int64 {
	deadline := time.Now().Add(c.PhaseDuration)
	var lists, seq atomic.Int64
	phase := "flood-baseline"
	if flood {
		phase = "flood"
	}
	env.Progress.Phase(phase, int64(c.ProbeRate*c.PhaseDuration.Seconds()), deadline, func() string {
		if !flood {
			return ""
		}
		return fmt.Sprintf("greedy lists %d", lists.Load())
	})
	floodCtx, stop := context.WithDeadline(ctx, deadline)
	defer stop()
	var wg sync.WaitGroup
	var logOnce sync.Once
	if flood {
		for range c.ParallelLists {
			wg.Go(func() {
				for floodCtx.Err() == nil {
					t := time.Now()
					var err error
					if c.DrainLists {
						err = drainList(floodCtx, f.greedy, f.floodNS)
					} else {
						_, err = f.greedy.CoreV1().ConfigMaps(f.floodNS).List(floodCtx, metav1.ListOptions{})
					}
					if floodCtx.Err() != nil {
						return // cut short by the phase's end, not the server
					}
					if err != nil {
						logOnce.Do(func() { env.Log.Warn("flood list failed", "err", err) })
					}
					record(key("LIST", "configmaps", "flood"), time.Since(t), err)
					lists.Add(1)
				}
			})
		}
	}
	cms := f.polite.CoreV1().ConfigMaps(f.politeNS)
	pace(ctx, c.ProbeRate, 8, deadline, 0, func(ctx context.Context, _ int, _ int64) {
		name := fmt.Sprintf("polite-%d", seq.Add(1))
		var created bool
		observe(key("POST", "configmaps", "polite"), func() error {
			_, err := cms.Create(ctx, configMap(name), metav1.CreateOptions{})
			created = err == nil
			return err
		})
		if created {
			observe(key("GET", "configmaps", "polite"), func() error {
				_, err := cms.Get(ctx, name, metav1.GetOptions{})
				return err
			})
			_ = cms.Delete(ctx, name, metav1.DeleteOptions{})
		}
		env.Progress.Add(1)
	})
	stop()
	wg.Wait()
	return lists.Load()
}

// runFlood runs the flood's baseline and flood phases, appending their
// latency stats, and reports the polite client's p99 and the greedy
// client's lists per second.
func (c GreedyClients) runFlood(ctx context.Context, env *loadtest.Env, f *floodSetup, phaseRec *atomic.Pointer[loadtest.Recorder],
	stats *[]loadtest.LatencyStat, observe func(loadtest.Key, func() error), record func(loadtest.Key, time.Duration, error)) error {
	r := env.Result
	run := func(name string, flood bool) (loadtest.Totals, int64, error) {
		rec := loadtest.NewRecorder(env.Start)
		phaseRec.Store(rec)
		before, err := env.Monitor.Mark(ctx)
		if err != nil {
			return loadtest.Totals{}, 0, fmt.Errorf("reading /metrics: %w", err)
		}
		lists := c.floodPhase(ctx, env, f, flood, observe, record)
		after, err := env.Monitor.Mark(ctx)
		if err != nil {
			return loadtest.Totals{}, 0, fmt.Errorf("reading /metrics: %w", err)
		}
		for _, st := range rec.Stats(true) {
			st.Phase = name
			*stats = append(*stats, st)
		}
		return after.Since(before), lists, nil
	}
	base, _, err := run("flood-baseline", false)
	if err != nil {
		return err
	}
	fl, lists, err := run("flood", true)
	if err != nil {
		return err
	}
	politeP99 := func(ph string) float64 {
		var worst time.Duration
		for _, st := range *stats {
			if st.Phase == ph && st.Scope == "polite" {
				worst = max(worst, st.P99.D())
			}
		}
		return worst.Seconds()
	}
	secs := c.PhaseDuration.Seconds()
	r.AddFigure("flood_baseline_polite_p99", "flood baseline: polite create/get worst p99", politeP99("flood-baseline"), "s")
	r.AddFigure("flood_polite_p99", "flood: polite create/get worst p99", politeP99("flood"), "s")
	r.AddFigure("flood_greedy_lists_per_second", "flood: greedy full lists completed per second", float64(lists)/secs, "lists/s")
	r.AddFigure("flood_baseline_cpu", "flood baseline: server CPU", base.CPUSeconds/secs, "cores")
	r.AddFigure("flood_cpu", "flood: server CPU", fl.CPUSeconds/secs, "cores")
	r.AddVerdict("polite create+get p99 under 0.5 s during the flood", "< 0.5 s", fmt.Sprintf("%.3f s", politeP99("flood")), politeP99("flood") < 0.5)
	return nil
}

// drainList lists the namespace's ConfigMaps and reads the whole answer
// without decoding it: the server does all its work, while the bench
// process — which also hosts the polite client — does not spend a core
// decoding 12 MB answers and stall the polite client's goroutines in its
// own garbage collection, which would be measured as server latency.
func drainList(ctx context.Context, c kubernetes.Interface, ns string) error {
	return drain(ctx, c, ns, "configmaps")
}

// drain lists resource in ns (all namespaces when empty) and reads the
// answer without decoding it.
func drain(ctx context.Context, c kubernetes.Interface, ns, resource string) error {
	body, err := c.CoreV1().RESTClient().Get().Namespace(ns).Resource(resource).Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(io.Discard, body)
	return err
}
