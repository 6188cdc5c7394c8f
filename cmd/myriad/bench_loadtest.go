package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/bench/scenarios"
)

// loadtestFlags registers the flags every SLO scenario shares.
func loadtestFlags(fs *flag.FlagSet) *loadtest.Options {
	o := &loadtest.Options{}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the server to measure (default: start `myriad up` on a temporary data dir as a subprocess)")
	fs.StringVar(&o.DataDir, "data-dir", "", "data directory of the server the bench starts (default: a temporary directory, removed afterwards)")
	fs.IntVar(&o.ServerPID, "server-pid", 0, "PID of a local server given by --kubeconfig, to read its CPU and RSS from /proc (default: from its process_* metrics)")
	fs.StringVar(&o.Out, "out", "", "report directory: report.md, results.json, plots (required)")
	fs.DurationVar(&o.SampleInterval, "sample-interval", time.Second, "how often /metrics and the server process are sampled")
	fs.BoolVar(&o.Keep, "keep", false, "leave the run's namespaces, objects and hollow Nodes on the server instead of deleting them at the end (for a throwaway server: the report does not wait for the deletion)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the bench process (its clients, watchers and hollow nodes, not the server) over the scenario to this file")
	fs.Func("server-flag", "extra flag for the `myriad up` the bench starts, e.g. --server-flag=--max-requests-inflight=100 (repeatable)", func(v string) error {
		o.ServerArgs = append(o.ServerArgs, v)
		return nil
	})
	return o
}

// runLoadtest parses args and runs scenario under the harness, printing
// report.md to stdout.
func runLoadtest(ctx context.Context, name string, o *loadtest.Options, args []string, stdout io.Writer,
	restartCommand string, scenario loadtest.Scenario) error {
	if o.Out == "" {
		return errors.New("--out DIR is required")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the myriad binary: %w", err)
	}
	o.Binary = exe
	o.Command = loadtest.CommandLine(append([]string{"myriad", "bench", name}, args...))
	if os.Getenv("GOGC") == "" {
		// The scenarios' hollow nodes, informers and pod trackers are a
		// long-lived heap, as in `myriad sim`, which runs at GOGC 400 for
		// the same reason: at the default 100 the bench process spent a
		// quarter of its CPU in garbage collection during a density run,
		// on the two cores the server under test shares.
		debug.SetGCPercent(400)
	}
	o.Progress = os.Stderr
	log, err := newLogger("warn")
	if err != nil {
		return err
	}
	o.Logger = log
	// client-go logs through klog; when hollow nodes or informers stop,
	// their cancelled requests would print lines across the progress line.
	klog.SetLogger(logr.Discard())
	res, runErr := loadtest.Run(ctx, name, *o, restartCommand, scenario)
	if res != nil {
		if err := loadtest.WriteMarkdown(stdout, res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(o.Out, "report.md"))
	}
	return runErr
}

func runAPILatencyBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "api-latency"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.APILatency
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "measured duration")
	fs.Float64Var(&c.Rate, "rate", 100, "calls per second")
	fs.IntVar(&c.Workers, "workers", 16, "concurrent callers")
	fs.Int64Var(&c.MaxCalls, "max-calls", 0, "stop after this many calls (default rate × duration)")
	fs.IntVar(&c.Namespaces, "namespaces", 4, "namespaces the objects are spread over")
	fs.IntVar(&c.Prefill, "prefill", 50, "config maps and pods per namespace created before measuring")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runBenchCompare(_ context.Context, args []string, stdout io.Writer) error {
	if len(args) != 2 {
		return errors.New("usage: myriad bench compare A/results.json B/results.json")
	}
	a, err := loadtest.ReadResult(args[0])
	if err != nil {
		return err
	}
	b, err := loadtest.ReadResult(args[1])
	if err != nil {
		return err
	}
	return loadtest.Compare(stdout, a, b, args[0], args[1])
}

func runWatchLatencyBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "watch-latency"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.WatchLatency
	fs.IntVar(&c.Watchers, "watchers", 10, "concurrent watches")
	fs.Float64Var(&c.Rate, "rate", 20, "writes per second")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "writing duration")
	fs.Int64Var(&c.MaxWrites, "max-writes", 0, "stop after this many writes (default rate × duration)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runKubeletPathBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "kubelet-path"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.KubeletPath
	fs.IntVar(&c.Nodes, "nodes", 1000, "hollow nodes serving the kubelet API, one pod each")
	fs.Float64Var(&c.Rate, "rate", 50, "pods/log calls per second")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "length of the logs phase")
	fs.IntVar(&c.Streams, "streams", 200, "exec sessions held open together")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runGreedyClientsBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "greedy-clients"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.GreedyClients
	fs.IntVar(&c.Agents, "agents", 50, "greedy per-node agents listing all Services (and Pods) every --agent-interval")
	fs.DurationVar(&c.AgentInterval, "agent-interval", 5*time.Second, "each agent's list interval")
	fs.DurationVar(&c.PhaseDuration, "phase-duration", 15*time.Second, "length of the baseline and of the greedy phase")
	fs.Float64Var(&c.ProbeRate, "probe-rate", 20, "probe calls per second")
	fs.IntVar(&c.Pods, "pods", 1000, "pods created before measuring")
	fs.IntVar(&c.Services, "services", 200, "services created before measuring")
	fs.IntVar(&c.Namespaces, "namespaces", 5, "namespaces the objects are spread over")
	fs.IntVar(&c.Nodes, "nodes", 0, "hollow nodes heartbeating through both phases")
	fs.BoolVar(&c.ServicesOnly, "services-only", false, "agents list only Services (default Services and Pods)")
	fs.BoolVar(&c.AdminIdentities, "admin-identities", false, "agents and probe use the bench's admin credentials (system:masters, exempt from flow control) instead of ServiceAccounts")
	fs.IntVar(&c.ParallelLists, "parallel-lists", 0, "add the list flood: one ServiceAccount runs this many full LISTs of ConfigMaps back to back while another creates and gets ConfigMaps (the flow control issue's measurement: 40)")
	fs.IntVar(&c.ListConfigMaps, "list-configmaps", 3000, "ConfigMaps the flood lists")
	fs.IntVar(&c.ConfigMapBytes, "configmap-bytes", 4096, "bytes of each flood ConfigMap")
	fs.BoolVar(&c.DrainLists, "drain-lists", false, "the flood's client and the agents read answers without decoding them (keeps the bench's own CPU out of the measurement)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runChurnBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "churn"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.Churn
	fs.IntVar(&c.Nodes, "nodes", 20, "hollow nodes the pods are bound to")
	fs.Float64Var(&c.Rate, "rate", 20, "pod creations per second")
	fs.DurationVar(&c.Lifetime, "lifetime", 5*time.Second, "each pod's life from create to delete (keep it above the hollow nodes' 1s start delay, or pods are deleted before they run)")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "creating duration")
	fs.Int64Var(&c.MaxPods, "max-pods", 0, "stop after this many pods (default rate × duration)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runHeartbeatBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "heartbeat"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.Heartbeat
	var modes string
	fs.IntVar(&c.Nodes, "nodes", 100, "idle hollow nodes")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "measured time per mode")
	fs.DurationVar(&c.Warmup, "warmup", 15*time.Second, "wait after registration before measuring (15s: from then on every node renews once per 10s window)")
	fs.StringVar(&modes, "modes", "idle,lease,full-status", "modes to measure, in order: idle (no nodes: the background), lease (KEP-0009), full-status (15 KB Node status every 10s)")
	fs.BoolFunc("full-status", "measure only full Node status heartbeats (same as --modes full-status)", func(string) error {
		modes = "full-status"
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.Modes = splitList(modes)
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runRestartStormBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "restart-storm"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.RestartStorm
	var restartCommand string
	fs.IntVar(&c.Nodes, "nodes", 50, "hollow nodes connected during the restart")
	fs.IntVar(&c.Informers, "informers", 10, "client-go informers connected during the restart (pods and config maps)")
	fs.IntVar(&c.Pods, "pods", 200, "pods bound to the hollow nodes before the restart")
	fs.IntVar(&c.Objects, "objects", 0, "other objects created before the restart, in a namespace of their own: ConfigMaps and Secrets (four tenths each), Events and headless Services (a tenth each)")
	fs.Float64Var(&c.ProbeRate, "probe-rate", 20, "probe calls per second")
	fs.DurationVar(&c.Steady, "steady", 5*time.Second, "measured time before the restart and after recovery")
	fs.DurationVar(&c.RecoveryTimeout, "recovery-timeout", time.Minute, "longest wait for recovery")
	fs.StringVar(&restartCommand, "restart-command", "", "shell command restarting a server given by --kubeconfig (e.g. 'systemctl restart myriad')")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, restartCommand, c.Run)
}

func runDensityBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "density"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.Density
	fs.IntVar(&c.Nodes, "nodes", 100, "hollow nodes to start")
	fs.BoolVar(&c.ExistingNodes, "existing-nodes", false, "use the cluster's nodes instead of starting hollow ones")
	fs.IntVar(&c.PodsPerNode, "pods-per-node", 30, "pods per node")
	fs.IntVar(&c.PodsPerDeployment, "pods-per-deployment", 30, "replicas of each Deployment")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "longest wait for every pod to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}

func runCRDsBench(ctx context.Context, args []string, stdout io.Writer) error {
	const name = "crds"
	fs := flag.NewFlagSet("myriad bench "+name, flag.ContinueOnError)
	o := loadtestFlags(fs)
	var c scenarios.CRDs
	fs.IntVar(&c.CRDs, "crds", 1000, "CRDs installed")
	fs.IntVar(&c.KindsPerGroup, "kinds-per-group", 10, "CRDs to an API group")
	fs.IntVar(&c.Objects, "objects", 100000, "custom resources, and as many ConfigMaps, of --object-size (negative: none)")
	fs.IntVar(&c.ObjectSize, "object-size", 2048, "payload bytes of each object")
	fs.IntVar(&c.Lists, "lists", 100, "LISTs by label of each kind, each matching 1% of the objects")
	fs.IntVar(&c.Probes, "probes", 50, "GETs of each discovery and OpenAPI document")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return runLoadtest(ctx, name, o, args, stdout, "", c.Run)
}
