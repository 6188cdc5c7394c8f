package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// GreedyClients is the `greedy-clients` scenario (the Civis seed's greedy
// DaemonSet): Agents per-node agents each list every Service and every Pod
// in the cluster every AgentInterval, while a probe measures the latency
// everyone else sees. A baseline phase of the same length without the
// agents comes first.
type GreedyClients struct {
	// Agents is the number of greedy agents (one per node). Default 50.
	Agents int
	// AgentInterval between one agent's list rounds. Default 5 s.
	AgentInterval time.Duration
	// PhaseDuration is the length of the baseline and of the greedy
	// phase. Default 15 s.
	PhaseDuration time.Duration
	// ProbeRate is the probe's calls per second. Default 20.
	ProbeRate float64
	// Pods and Services created before measuring, so the agents' lists
	// carry weight. Defaults 1,000 and 200.
	Pods, Services int
	// Namespaces the objects are spread over. Default 5.
	Namespaces int
	// Nodes hollow nodes heartbeat through both phases, so their Lease
	// renewals are among the clients the agents must not starve. Default 0.
	Nodes int
	// ServicesOnly: each agent round lists all Services only (the flow
	// control issue's agents); default Services and Pods.
	ServicesOnly bool
	// AdminIdentities makes the agents and the probe use the bench's own
	// credentials, as runs before flow control did. By default they are
	// ServiceAccounts (the agents a DaemonSet's, cluster-wide view; the
	// probe an application's, edit): the bench's admin is in
	// system:masters, which flow control exempts, so only ordinary
	// identities show what flow control does.
	AdminIdentities bool

	// ParallelLists, when > 0, adds the list flood (greedylists.go): a
	// baseline and a flood phase in which one ServiceAccount runs this
	// many full LISTs of ListConfigMaps ConfigMaps of ConfigMapBytes
	// (defaults 3,000 and 4 KiB) back to back while another creates and
	// gets ConfigMaps. The measurement is 40.
	ParallelLists  int
	ListConfigMaps int
	ConfigMapBytes int
	// DrainLists makes the flood's client and the agents read each answer
	// without decoding it (drain), to take the bench process's own
	// decoding out of the measurement; default false: they decode, as
	// client-go's typed clients (and the measurement) do.
	DrainLists bool
}

func (c *GreedyClients) defaults() {
	if c.Agents <= 0 {
		c.Agents = 50
	}
	if c.AgentInterval <= 0 {
		c.AgentInterval = 5 * time.Second
	}
	if c.PhaseDuration <= 0 {
		c.PhaseDuration = 15 * time.Second
	}
	if c.ProbeRate <= 0 {
		c.ProbeRate = 20
	}
	if c.Pods <= 0 {
		c.Pods = 1000
	}
	if c.Services <= 0 {
		c.Services = 200
	}
	if c.Namespaces <= 0 {
		c.Namespaces = 5
	}
	if c.ListConfigMaps <= 0 {
		c.ListConfigMaps = 3000
	}
	if c.ConfigMapBytes <= 0 {
		c.ConfigMapBytes = 4096
	}
}

// probeMix is what "everyone else" does: object reads and writes and
// namespace lists.
var probeMix = []loadtest.Key{
	key("GET", "pods", "resource"),
	key("LIST", "pods", "namespace"),
	key("POST", "configmaps", "resource"),
	key("DELETE", "configmaps", "resource"),
}

// Run implements loadtest.Scenario.
func (c GreedyClients) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	r.Params["agents"] = itoa(c.Agents)
	r.Params["agent-interval"] = c.AgentInterval.String()
	r.Params["phase-duration"] = c.PhaseDuration.String()
	r.Params["probe-rate"] = ftoa(c.ProbeRate)
	r.Params["pods"] = itoa(c.Pods)
	r.Params["services"] = itoa(c.Services)
	r.Params["namespaces"] = itoa(c.Namespaces)
	r.Params["nodes"] = itoa(c.Nodes)
	r.Params["services-only"] = strconv.FormatBool(c.ServicesOnly)
	r.Params["admin-identities"] = strconv.FormatBool(c.AdminIdentities)
	if c.ParallelLists > 0 {
		r.Params["parallel-lists"] = itoa(c.ParallelLists)
		r.Params["list-configmaps"] = itoa(c.ListConfigMaps)
		r.Params["configmap-bytes"] = itoa(c.ConfigMapBytes)
		r.Params["drain-lists"] = strconv.FormatBool(c.DrainLists)
	}
	env.OwnLatencyTable = true

	prefix := "bench-greedy-" + runID()
	nns := c.Namespaces
	if c.ParallelLists > 0 {
		nns += 2 // the flood's and the polite client's
	}
	namespaces, err := createNamespaces(ctx, env.Client, prefix, nns)
	if err != nil {
		return err
	}
	var flood *floodSetup
	if c.ParallelLists > 0 {
		floodNS, politeNS := namespaces[c.Namespaces], namespaces[c.Namespaces+1]
		defer cleanupNamespaces(ctx, env, namespaces[c.Namespaces:])
		namespaces = namespaces[:c.Namespaces]
		if flood, err = c.setupFlood(ctx, env, floodNS, politeNS); err != nil {
			return err
		}
	}
	defer cleanupNamespaces(ctx, env, namespaces)
	agentClient, probeClient := env.Client, env.Client
	if !c.AdminIdentities {
		if agentClient, err = clusterServiceAccountClient(ctx, env, namespaces[0], prefix+"-agent", "view"); err != nil {
			return err
		}
		if probeClient, err = clusterServiceAccountClient(ctx, env, namespaces[0], prefix+"-probe", "edit"); err != nil {
			return err
		}
		defer deleteClusterRoleBindings(ctx, env, prefix+"-agent", prefix+"-probe")
	}
	var nodes *sim.Sim
	if c.Nodes > 0 {
		if nodes, err = hollowNodes(ctx, env, prefix+"-node-", c.Nodes, false); err != nil {
			return err
		}
		defer deleteNodes(ctx, env, nodes.NodeNames())
		defer nodes.Stop()
	}
	env.Progress.Phase("prefill", int64(c.Pods+c.Services), time.Time{}, nil)
	podNames := make([][]string, len(namespaces))
	for i := range c.Pods {
		ns := i % len(namespaces)
		podNames[ns] = append(podNames[ns], fmt.Sprintf("p-%d", i))
	}
	if err := prefill(ctx, env, c.Pods, func(ctx context.Context, i int) error {
		_, err := env.Client.CoreV1().Pods(namespaces[i%len(namespaces)]).Create(ctx, pod(fmt.Sprintf("p-%d", i), ""), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := prefill(ctx, env, c.Services, func(ctx context.Context, i int) error {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "myriad-bench"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		_, err := env.Client.CoreV1().Services(namespaces[i%len(namespaces)]).Create(ctx, svc, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}

	var phaseRec atomic.Pointer[loadtest.Recorder]
	record := func(k loadtest.Key, d time.Duration, err error) {
		env.Latency.Observe(k, d, err)
		phaseRec.Load().Observe(k, d, err)
	}
	observe := func(k loadtest.Key, call func() error) {
		t := time.Now()
		err := call()
		record(k, time.Since(t), err)
	}
	var seq atomic.Int64
	probe := func(ctx context.Context, w int, i int64) {
		k := probeMix[int(i)%len(probeMix)]
		ns := int(i) % len(namespaces)
		cms := probeClient.CoreV1().ConfigMaps(namespaces[ns])
		switch k {
		case probeMix[0]:
			names := podNames[ns]
			n := names[rand.IntN(len(names))]
			observe(k, func() error {
				_, err := probeClient.CoreV1().Pods(namespaces[ns]).Get(ctx, n, metav1.GetOptions{})
				return err
			})
		case probeMix[1]:
			observe(k, func() error {
				_, err := probeClient.CoreV1().Pods(namespaces[ns]).List(ctx, metav1.ListOptions{})
				return err
			})
		case probeMix[2], probeMix[3]:
			// A create and, as its own measured call, the delete of it.
			name := fmt.Sprintf("probe-%d", seq.Add(1))
			var created bool
			observe(probeMix[2], func() error {
				_, err := cms.Create(ctx, configMap(name), metav1.CreateOptions{})
				created = err == nil
				return err
			})
			if created {
				observe(probeMix[3], func() error { return cms.Delete(ctx, name, metav1.DeleteOptions{}) })
			}
		}
		env.Progress.Add(1)
	}

	var stats []loadtest.LatencyStat
	phase := func(name string, agents int) (loadtest.Totals, error) {
		rec := loadtest.NewRecorder(env.Start)
		phaseRec.Store(rec)
		before, err := env.Monitor.Mark(ctx)
		if err != nil {
			return loadtest.Totals{}, fmt.Errorf("reading /metrics: %w", err)
		}
		var sim0 sim.Stats
		if nodes != nil {
			sim0 = nodes.Stats()
		}
		deadline := time.Now().Add(c.PhaseDuration)
		var agentLists atomic.Int64
		env.Progress.Phase(name, int64(c.ProbeRate*c.PhaseDuration.Seconds()), deadline, func() string {
			if agents == 0 {
				return ""
			}
			return fmt.Sprintf("agent lists %d", agentLists.Load())
		})
		agentCtx, stopAgents := context.WithDeadline(ctx, deadline)
		var wg sync.WaitGroup
		for range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runAgent(agentCtx, ctx, agentClient, c.ServicesOnly, c.DrainLists, observe, c.AgentInterval, &agentLists)
			}()
		}
		pace(ctx, c.ProbeRate, 4, deadline, 0, probe)
		wg.Wait()
		stopAgents()
		time.Sleep(200 * time.Millisecond)
		after, err := env.Monitor.Mark(ctx)
		if err != nil {
			return loadtest.Totals{}, fmt.Errorf("reading /metrics: %w", err)
		}
		if nodes != nil {
			reportHeartbeats(r, name, sim0, nodes.Stats())
		}
		for _, st := range rec.Stats(true) {
			st.Phase = name
			stats = append(stats, st)
		}
		return after.Since(before), nil
	}
	base, err := phase("baseline", 0)
	if err != nil {
		return err
	}
	greedy, err := phase("greedy", c.Agents)
	if err != nil {
		return err
	}
	if flood != nil {
		if err := c.runFlood(ctx, env, flood, &phaseRec, &stats, observe, record); err != nil {
			return err
		}
	}
	r.Latencies = stats

	probeP99 := func(ph string) float64 {
		var worst time.Duration
		for _, st := range stats {
			if st.Phase == ph && st.Resource != "services" && !(st.Verb == "LIST" && st.Scope == "cluster") {
				worst = max(worst, st.P99.D())
			}
		}
		return worst.Seconds()
	}
	secs := c.PhaseDuration.Seconds()
	// The agents' lists: cluster-wide Services (and Pods). With hollow
	// nodes, whose pod lists are cluster-wide too (by field selector),
	// only the Services are the agents' alone.
	isAgentList := func(k loadtest.RequestKey) bool {
		return k.Verb == "LIST" && k.Scope == "cluster" && (k.Resource == "services" || c.Nodes == 0)
	}
	r.AddFigure("baseline_probe_p99", "baseline: worst probe p99", probeP99("baseline"), "s")
	r.AddFigure("greedy_probe_p99", "greedy: worst probe p99", probeP99("greedy"), "s")
	r.AddFigure("baseline_cpu", "baseline: server CPU", base.CPUSeconds/secs, "cores")
	r.AddFigure("greedy_cpu", "greedy: server CPU", greedy.CPUSeconds/secs, "cores")
	r.AddFigure("greedy_cluster_lists", "greedy: cluster-wide lists the server counted", greedy.Sum(isAgentList), "")
	r.AddFigure("greedy_cluster_lists_per_second", "greedy: cluster-wide lists per second", greedy.Sum(isAgentList)/secs, "lists/s")
	var agentCalls int
	for _, st := range stats {
		if st.Phase == "greedy" && isAgentList(loadtest.RequestKey{Verb: st.Verb, Resource: st.Resource, Scope: st.Scope}) {
			agentCalls += st.Count + st.Errors
		}
	}
	r.AddFigure("greedy_agent_lists", "greedy: cluster-wide lists the agents made", float64(agentCalls), "")
	r.AddVerdict("server counted the agents' lists", fmt.Sprint(agentCalls), fmt.Sprint(greedy.Sum(isAgentList)),
		float64(agentCalls) == greedy.Sum(isAgentList))
	return nil
}

// reportHeartbeats adds a phase's hollow-node heartbeat figures: the
// nodes' Lease renewals are the traffic flow control must keep whole.
func reportHeartbeats(r *loadtest.Result, phase string, before, after sim.Stats) {
	late := after.Lateness.Sub(before.Lateness)
	r.AddFigure(phase+"_heartbeats", phase+": hollow node heartbeats acknowledged", float64(after.Renewals-before.Renewals), "")
	r.AddFigure(phase+"_heartbeat_errors", phase+": hollow node heartbeats that failed", float64(after.RenewalErrors-before.RenewalErrors), "")
	r.AddFigure(phase+"_heartbeat_lateness_p99", phase+": heartbeat acknowledged after its time, p99", late.Quantile(0.99).Seconds(), "s")
	r.AddFigure(phase+"_max_renew_gap", phase+": longest gap between a node's heartbeats so far", after.MaxRenewGap.Seconds(), "s")
}

// runAgent is one greedy agent: from a random offset within the interval,
// list every Service (and every Pod unless servicesOnly) each interval
// until agentCtx ends, reading the answers undecoded with drainLists. A
// round in flight finishes under callCtx.
func runAgent(agentCtx, callCtx context.Context, client kubernetes.Interface, servicesOnly, drainLists bool, observe func(loadtest.Key, func() error),
	interval time.Duration, lists *atomic.Int64) {
	offset := time.Duration(rand.Int64N(int64(interval)))
	t := time.NewTimer(offset)
	defer t.Stop()
	for {
		select {
		case <-agentCtx.Done():
			return
		case <-t.C:
		}
		observe(key("LIST", "services", "cluster"), func() error {
			if drainLists {
				return drain(callCtx, client, "", "services")
			}
			_, err := client.CoreV1().Services("").List(callCtx, metav1.ListOptions{})
			return err
		})
		lists.Add(1)
		if !servicesOnly {
			observe(key("LIST", "pods", "cluster"), func() error {
				if drainLists {
					return drain(callCtx, client, "", "pods")
				}
				_, err := client.CoreV1().Pods("").List(callCtx, metav1.ListOptions{})
				return err
			})
			lists.Add(1)
		}
		t.Reset(interval)
	}
}
