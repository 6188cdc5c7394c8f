package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// benchScenario is one `myriad bench` scenario.
type benchScenario struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout io.Writer) error
}

// benchScenarios lists the scenarios; each lives in its own bench_*.go file.
func benchScenarios() []benchScenario {
	return []benchScenario{
		{"store", "storage engine write/read latency and capacity", runStoreBench},
		{"api", "API server create/get/list/lease throughput and latency", runAPIBench},
		{"restart", "API server restart time on a large store", runRestartBench},
		{"scheduler", "scheduler core in-process: pods/s and placement quality with/without equivalence classes and sampling", runSchedulerBench},
		{"api-latency", "SLO: mixed API calls, p50/p90/p99 per verb/resource/scope vs upstream SLOs", runAPILatencyBench},
		{"watch-latency", "SLO: write acknowledged → each watcher sees it, p50/p99", runWatchLatencyBench},
		{"kubelet-path", "pods/log through the API server to hollow kubelets, p50/p99; server memory per open exec session", runKubeletPathBench},
		{"crds", "CRDs: time to Established for many, discovery/OpenAPI latency, memory per custom resource vs ConfigMap, LIST-by-label p99", runCRDsBench},
		{"greedy-clients", "SLO: per-node agents listing all Services/Pods vs everyone else's latency", runGreedyClientsBench},
		{"churn", "SLO: short-lived pods on hollow nodes at a fixed rate: create/delete and running latency", runChurnBench},
		{"heartbeat", "SLO: idle hollow nodes, Lease vs full Node status heartbeats: server CPU, memory, writes", runHeartbeatBench},
		{"restart-storm", "SLO: restart the API server under hollow nodes and informers: recovery, relists, 429s", runRestartStormBench},
		{"density", "SLO: N hollow nodes × P pods through Deployments: throughput and pod startup latency", runDensityBench},
		{"compare", "side-by-side key figures of two results.json: compare A B", runBenchCompare},
	}
}

func runBench(ctx context.Context, args []string, stdout io.Writer) error {
	scenarios := benchScenarios()
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(stdout, "usage: myriad bench SCENARIO [flags]   (myriad bench SCENARIO -h lists its flags)")
		fmt.Fprintln(stdout, "\nscenarios:")
		for _, s := range scenarios {
			fmt.Fprintf(stdout, "  %-15s %s\n", s.name, s.summary)
		}
		return nil
	}
	var names []string
	for _, s := range scenarios {
		if len(args) > 0 && s.name == args[0] {
			return s.run(ctx, args[1:], stdout)
		}
		names = append(names, s.name)
	}
	list := strings.Join(names, ", ")
	if len(args) == 0 {
		return fmt.Errorf("usage: myriad bench SCENARIO [flags] (scenarios: %s; myriad bench -h describes them)", list)
	}
	return fmt.Errorf("unknown bench scenario %q (available: %s)", args[0], list)
}
