package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// The loadtest tests run small versions of every `myriad bench` SLO
// scenario through the real binary and check the reports against what the
// server itself counted (its /metrics, scraped here around each run, and
// its objects), so a report cannot make its numbers up.

// runLoadBench runs `myriad bench args...` and returns its results.json
// and stderr (the progress line).
func runLoadBench(t *testing.T, args ...string) (*loadtest.Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out := ""
	for i, a := range args {
		if a == "--out" {
			out = args[i+1]
		}
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"bench"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("myriad bench %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), tail(stderr.String(), 3000))
	}
	res, err := loadtest.ReadResult(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkReportDir(t, out, res)
	if !strings.Contains(stdout.String(), "# myriad bench "+res.Scenario) {
		t.Errorf("stdout lacks the report:\n%s", tail(stdout.String(), 2000))
	}
	if !strings.Contains(stderr.String(), "\r"+res.Scenario+" ") {
		t.Errorf("no progress line on stderr:\n%q", tail(stderr.String(), 500))
	}
	return res, stderr.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// checkReportDir checks the schema fields, report.md and that every plot
// exists and is a non-empty SVG.
func checkReportDir(t *testing.T, dir string, res *loadtest.Result) {
	t.Helper()
	if res.SchemaVersion != loadtest.SchemaVersion || res.Scenario == "" || res.Command == "" || res.Machine.CPUs == 0 ||
		res.Start.IsZero() || res.Duration <= 0 || res.Server.Host == "" {
		t.Errorf("results.json lacks schema fields: version %d scenario %q command %q machine %+v start %v duration %v server %+v",
			res.SchemaVersion, res.Scenario, res.Command, res.Machine, res.Start, res.Duration, res.Server)
	}
	for _, name := range []string{"server cpu", "server rss", "server writes"} {
		if s, ok := res.SeriesNamed(name); !ok || len(s.Points) == 0 {
			t.Errorf("series %q missing or empty", name)
		}
	}
	if f, ok := res.Figure("server_cpu_seconds"); !ok || f.Value <= 0 {
		t.Errorf("server CPU figure %+v", f)
	}
	if len(res.ServerRequests) == 0 {
		t.Error("no server-counted requests in results.json")
	}
	if len(res.Plots) < 3 {
		t.Errorf("only %d plots", len(res.Plots))
	}
	for _, p := range res.Plots {
		b, err := os.ReadFile(filepath.Join(dir, p.File))
		if err != nil || len(b) < 1000 || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("plot %s: %d bytes, %v", p.File, len(b), err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# myriad bench " + res.Scenario, "## Key figures", res.Command} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// figure returns a key figure or fails.
func figure(t *testing.T, res *loadtest.Result, key string) float64 {
	t.Helper()
	f, ok := res.Figure(key)
	if !ok {
		t.Fatalf("%s: no figure %q", res.Scenario, key)
	}
	return f.Value
}

// calls is the bench's own count (successes and failures) of a key.
func calls(res *loadtest.Result, verb, resource, scope string) int {
	n := 0
	for _, l := range res.Latencies {
		if l.Verb == verb && l.Resource == resource && l.Scope == scope {
			n += l.Count + l.Errors
		}
	}
	return n
}

func checkVerdicts(t *testing.T, res *loadtest.Result) {
	t.Helper()
	for _, v := range res.Verdicts {
		if !v.Pass {
			t.Errorf("%s: verdict %q failed: target %s, observed %s", res.Scenario, v.Name, v.Target, v.Observed)
		}
	}
}

// scrapeServer reads the server's /metrics.
func scrapeServer(t *testing.T, s *server) loadtest.Scrape {
	t.Helper()
	mc, err := loadtest.NewMetricsClient(s.restConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := mc.Scrape(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func requests(verb, resource, scope string) func(loadtest.RequestKey) bool {
	return func(k loadtest.RequestKey) bool {
		return k.Verb == verb && k.Resource == resource && k.Scope == scope && k.Subresource == ""
	}
}

// TestLoadtestScenarios runs every scenario but restart-storm against one
// `myriad up` (scheduler and controllers included, which density needs).
func TestLoadtestScenarios(t *testing.T) {
	dir := t.TempDir()
	s, err := startServer(filepath.Join(dir, "server"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping the server: %v", err)
		}
	}()
	pid := strconv.Itoa(s.cmd.Process.Pid)
	common := func(name string) []string {
		return []string{"--kubeconfig", s.kubeconfig, "--server-pid", pid, "--out", filepath.Join(dir, name)}
	}
	var apiRes *loadtest.Result

	t.Run("api-latency", func(t *testing.T) {
		before := scrapeServer(t, s)
		res, _ := runLoadBench(t, append([]string{"api-latency", "--duration", "5s", "--rate", "80", "--prefill", "20"}, common("api")...)...)
		after := scrapeServer(t, s)
		apiRes = res
		checkVerdicts(t, res)
		if res.Server.PID != s.cmd.Process.Pid {
			t.Errorf("server PID %d, want %d", res.Server.PID, s.cmd.Process.Pid)
		}
		if len(res.Latencies) < 10 {
			t.Fatalf("only %d latency rows", len(res.Latencies))
		}
		for _, l := range res.Latencies {
			if l.Pass == nil || l.SLO == 0 || l.Count == 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
				t.Errorf("latency row %+v", l)
			}
		}
		// Calls no other client of this server makes (the namespace
		// controller lists the namespaces the bench deletes, and the root
		// CA publisher writes config maps): the server's count must be
		// exactly the bench's.
		for _, k := range [][3]string{
			{"GET", "configmaps", "resource"}, {"PATCH", "configmaps", "resource"}, {"GET", "pods", "resource"},
			{"PATCH", "pods", "resource"}, {"LIST", "configmaps", "cluster"}, {"LIST", "pods", "cluster"},
		} {
			server := loadtest.RequestsDelta(before, after, requests(k[0], k[1], k[2]))
			if bench := calls(res, k[0], k[1], k[2]); float64(bench) != server {
				t.Errorf("%v: bench counted %d, server %v", k, bench, server)
			}
		}
		// Every tick of 80/s × 5 s is a call or, when all workers were
		// busy (a loaded machine), a dropped tick.
		// The report's own table of the server's counts agrees too.
		var gets float64
		for _, c := range res.ServerRequests {
			if c.Verb == "GET" && c.Resource == "configmaps" && c.Scope == "resource" && c.Subresource == "" {
				gets += c.Count
			}
		}
		if bench := calls(res, "GET", "configmaps", "resource"); float64(bench) != gets {
			t.Errorf("report's server table: %v config map GETs, bench %d", gets, bench)
		}
		if made, dropped := figure(t, res, "calls"), figure(t, res, "dropped_ticks"); made+dropped < 380 || made+dropped > 400 || made < 50 {
			t.Errorf("%v calls + %v dropped, want 400 in all", made, dropped)
		}
	})

	t.Run("watch-latency", func(t *testing.T) {
		before := scrapeServer(t, s)
		res, _ := runLoadBench(t, append([]string{"watch-latency", "--duration", "4s", "--rate", "25", "--watchers", "5"}, common("watch")...)...)
		after := scrapeServer(t, s)
		checkVerdicts(t, res)
		writes := figure(t, res, "writes")
		// Updates are the bench's alone; creates also include the root CA
		// publisher's kube-root-ca.crt (made when the namespace appears,
		// and again when the bench's cleanup deletes it).
		puts := loadtest.RequestsDelta(before, after, requests("PUT", "configmaps", "resource"))
		if bench := calls(res, "PUT", "configmaps", "resource"); float64(bench) != puts {
			t.Errorf("bench made %d updates, server counted %v", bench, puts)
		}
		posts := loadtest.RequestsDelta(before, after, requests("POST", "configmaps", "resource"))
		if bench := calls(res, "POST", "configmaps", "resource"); posts < float64(bench) || posts > float64(bench)+2 {
			t.Errorf("bench made %d creates, server counted %v", bench, posts)
		}
		if got := float64(calls(res, "PUT", "configmaps", "resource") + calls(res, "POST", "configmaps", "resource")); got != writes {
			t.Errorf("writes figure %v, latency rows %v", writes, got)
		}
		if got := figure(t, res, "events_received"); got != 5*writes {
			t.Errorf("%v events for %v writes × 5 watchers", got, writes)
		}
		if p99 := figure(t, res, "watch_delay_p99"); p99 <= 0 && figure(t, res, "events_before_ack") < 5*writes {
			t.Errorf("watch delay p99 %v", p99)
		}
	})

	t.Run("greedy-clients", func(t *testing.T) {
		before := scrapeServer(t, s)
		res, _ := runLoadBench(t, append([]string{"greedy-clients", "--phase-duration", "4s", "--agents", "20", "--agent-interval", "2s",
			"--pods", "300", "--services", "50", "--nodes", "10"}, common("greedy")...)...)
		after := scrapeServer(t, s)
		checkVerdicts(t, res)
		// The hollow nodes heartbeat through both phases, and the agents
		// and probe act as ServiceAccounts (no errors: RBAC lets them).
		if n := figure(t, res, "baseline_heartbeats") + figure(t, res, "greedy_heartbeats"); n == 0 {
			t.Error("no heartbeats counted")
		}
		if n := figure(t, res, "greedy_heartbeat_errors"); n != 0 {
			t.Errorf("%v heartbeats failed", n)
		}
		for _, l := range res.Latencies {
			if l.Errors > 0 {
				t.Errorf("%s %s %s: %d errors", l.Phase, l.Verb, l.Resource, l.Errors)
			}
		}
		server := loadtest.RequestsDelta(before, after, requests("LIST", "services", "cluster"))
		if bench := calls(res, "LIST", "services", "cluster"); bench < 20 || float64(bench) != server {
			t.Errorf("agents' service lists: bench %d, server %v", bench, server)
		}
		phases := map[string]bool{}
		for _, l := range res.Latencies {
			phases[l.Phase] = true
		}
		if !phases["baseline"] || !phases["greedy"] {
			t.Errorf("phases %v", phases)
		}
	})

	t.Run("churn", func(t *testing.T) {
		before := scrapeServer(t, s)
		res, _ := runLoadBench(t, append([]string{"churn", "--nodes", "20", "--rate", "30", "--duration", "4s", "--lifetime", "2s"}, common("churn")...)...)
		after := scrapeServer(t, s)
		checkVerdicts(t, res)
		created := figure(t, res, "pods_created")
		if server := loadtest.RequestsDelta(before, after, requests("POST", "pods", "resource")); server != created+figure(t, res, "create_failures") {
			t.Errorf("bench created %v pods, server counted %v creates", created, server)
		}
		if created < 100 || figure(t, res, "never_ran") != 0 {
			t.Errorf("created %v, never ran %v", created, figure(t, res, "never_ran"))
		}
		if p50 := figure(t, res, "running_p50"); p50 < 0.9 || p50 > 10 {
			t.Errorf("create → running p50 %vs; the hollow nodes take 1 s", p50)
		}
		checkNoHollowNodesLeft(t, s, "bench-churn-")
	})

	t.Run("heartbeat", func(t *testing.T) {
		before := scrapeServer(t, s)
		// A short warmup: the nodes' first renewals come 5–15 s after
		// registration, so fewer than one per node fall in the window; the check is
		// that the server counted what the nodes did (the verdicts), less
		// the idle control plane's own Lease renewals.
		res, _ := runLoadBench(t, append([]string{"heartbeat", "--nodes", "50", "--duration", "4s", "--warmup", "4s"}, common("heartbeat")...)...)
		after := scrapeServer(t, s)
		checkVerdicts(t, res)
		lease := figure(t, res, "lease_heartbeats")
		full := figure(t, res, "full-status_heartbeats")
		if lease < 1 || lease > 50 || full < 1 || full > 50 {
			t.Errorf("heartbeats: lease %v, full-status %v; want 1..50", lease, full)
		}
		leasePuts := loadtest.RequestsDelta(before, after, requests("PUT", "leases", "resource"))
		if leasePuts < lease {
			t.Errorf("server counted %v Lease PUTs over the run, the measured window alone had %v", leasePuts, lease)
		}
		if figure(t, res, "full-status_status_writes_per_second") <= figure(t, res, "idle_status_writes_per_second") {
			t.Errorf("full-status heartbeats wrote no Node status")
		}
		checkNoHollowNodesLeft(t, s, "bench-hb-")
	})

	t.Run("density", func(t *testing.T) {
		before := scrapeServer(t, s)
		res, _ := runLoadBench(t, append([]string{"density", "--nodes", "30", "--pods-per-node", "10", "--timeout", "90s"}, common("density")...)...)
		after := scrapeServer(t, s)
		checkVerdicts(t, res)
		if listed, running := figure(t, res, "pods_listed"), figure(t, res, "pods_running"); listed != 300 || running != 300 {
			t.Errorf("listed %v, running %v; want 300", listed, running)
		}
		if server := loadtest.RequestsDelta(before, after, requests("POST", "pods", "resource")); server < 300 {
			t.Errorf("server counted %v pod creates for 300 pods", server)
		}
		if server := loadtest.RequestsDelta(before, after, requests("POST", "deployments", "resource")); server != figure(t, res, "deployments") {
			t.Errorf("server counted %v Deployment creates, bench %v", server, figure(t, res, "deployments"))
		}
		if s, ok := res.SeriesNamed("pods running"); !ok || s.Points[len(s.Points)-1].V != 300 {
			t.Errorf("pods running series %+v", s)
		}
		for _, k := range []string{"startup_p50", "startup_p90", "startup_p99"} {
			if v := figure(t, res, k); v <= 0 || v > 90 {
				t.Errorf("%s = %v", k, v)
			}
		}
		checkNoHollowNodesLeft(t, s, "bench-density-")
	})

	t.Run("crds", func(t *testing.T) {
		res, _ := runLoadBench(t, append([]string{"crds", "--crds", "6", "--kinds-per-group", "3", "--objects", "60", "--lists", "4", "--probes", "2"}, common("crds")...)...)
		checkVerdicts(t, res)
		if est := figure(t, res, "crds_established"); est <= 0 || est > 60 {
			t.Errorf("CRDs established after %v s", est)
		}
		for _, f := range []string{"custom_resource_heap_per_object", "configmap_heap_per_object", "custom_resource_create_rate"} {
			figure(t, res, f)
		}
		if calls(res, "LIST", "custom resources by label", "namespace") != 4 {
			t.Errorf("custom resource lists: %d", calls(res, "LIST", "custom resources by label", "namespace"))
		}
		// The scenario deletes what it installed.
		waitFor(t, 60*time.Second, func() bool {
			out, err := s.kubectl(t, "", "get", "crd", "-l", "myriad-bench", "-o", "name")
			return err == nil && strings.TrimSpace(out) == ""
		})
	})

	t.Run("compare", func(t *testing.T) {
		if apiRes == nil {
			t.Skip("api-latency did not run")
		}
		a := filepath.Join(dir, "api", "results.json")
		b := filepath.Join(dir, "density", "results.json")
		if _, err := os.Stat(b); err != nil {
			t.Skip("density did not run")
		}
		out, err := exec.Command(binary, "bench", "compare", a, b).CombinedOutput()
		if err != nil {
			t.Fatalf("compare: %v\n%s", err, out)
		}
		for _, want := range []string{"| figure | A | B | Δ | Δ% |", "| calls made |", "| pod startup p99 |", "GET configmaps resource p99"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("compare output lacks %q:\n%s", want, out)
			}
		}
		same, err := exec.Command(binary, "bench", "compare", a, a).CombinedOutput()
		if err != nil || !strings.Contains(string(same), "| 0.0% |") {
			t.Errorf("compare with itself: %v\n%s", err, same)
		}
	})

	// Last: what it leaves behind stays.
	t.Run("density --keep", func(t *testing.T) {
		res, _ := runLoadBench(t, append([]string{"density", "--nodes", "2", "--pods-per-node", "2", "--timeout", "60s", "--keep"}, common("density-keep")...)...)
		checkVerdicts(t, res)
		nodes, err := s.client(t).CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, "bench-density-") {
				kept++
			}
		}
		if kept != 2 {
			t.Errorf("%d of the run's 2 hollow Nodes left with --keep, want both", kept)
		}
	})
}

// checkNoHollowNodesLeft checks a scenario removed the nodes it started.
func checkNoHollowNodesLeft(t *testing.T, s *server, prefix string) {
	t.Helper()
	nodes, err := s.client(t).CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, prefix) {
			t.Errorf("node %s left behind", n.Name)
			return
		}
	}
}

// TestLoadtestRestartStorm lets the bench start `myriad up` itself (the
// no-kubeconfig path) and restart it under hollow nodes and informers.
func TestLoadtestRestartStorm(t *testing.T) {
	out := filepath.Join(t.TempDir(), "restart")
	res, _ := runLoadBench(t, "restart-storm", "--nodes", "20", "--informers", "6", "--pods", "100", "--objects", "60", "--steady", "3s", "--out", out)
	checkVerdicts(t, res)
	if n := figure(t, res, "objects_after_restart"); n != 60 {
		t.Errorf("%v of the 60 other objects listed after the restart", n)
	}
	if !res.Server.StartedByBench || res.Server.PID == 0 {
		t.Errorf("server %+v: want started by the bench", res.Server)
	}
	ready := figure(t, res, "ready_seconds")
	synced := figure(t, res, "informers_synced_seconds")
	if ready <= 0 || synced < ready {
		t.Errorf("ready after %vs, informers after %vs", ready, synced)
	}
	// Every informer reconnected: at least one list or watch call each.
	if n := figure(t, res, "informer_relists") + figure(t, res, "informer_watch_resumes"); n < 6 {
		t.Errorf("%v informer list+watch calls after the restart, want ≥ 6", n)
	}
	if w := figure(t, res, "server_watches_open"); w < 6 {
		t.Errorf("%v watches open after recovery; the 6 informers alone hold 6", w)
	}
	phases := map[string]int{}
	for _, l := range res.Latencies {
		phases[l.Phase] += l.Count
	}
	if phases["before"] == 0 || phases["after"] == 0 {
		t.Errorf("probe calls by phase %v", phases)
	}
	if b, err := os.ReadFile(filepath.Join(out, "server.log")); err != nil || bytes.Count(b, []byte("msg=serving")) != 2 {
		t.Errorf("server.log should show two starts: %v\n%s", err, tail(string(b), 2000))
	}
}
