package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/bench/schedbench"
)

// runSchedulerBench is `myriad bench scheduler`: the scheduler core
// in-process, no API server.
func runSchedulerBench(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("myriad bench scheduler", flag.ContinueOnError)
	var cfg schedbench.Config
	scenarios := fs.String("scenarios", "1000x30000,5000x50000", "comma-separated NODESxPODS cluster sizes")
	modes := fs.String("modes", "full,sampling,equivalence,equivalence+sampling", "comma-separated modes: full, sampling, equivalence, equivalence+sampling, rebuild (sampling with the snapshot copied per pod)")
	out := fs.String("out", "", "directory for report.md and results.json")
	fs.IntVar(&cfg.Templates, "templates", 300, "ReplicaSet-like pod templates")
	fs.IntVar(&cfg.Parallelism, "parallelism", 0, "filtering goroutines (default GOMAXPROCS)")
	fs.IntVar(&cfg.MaxPodsPerRun, "max-pods-per-run", 0, "cap on pods per run (0: all); capped runs are marked in the report")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	var api schedbench.APIConfig
	throughAPI := fs.Bool("through-api", false, "measure end to end instead: pods created through the API, bound through pods/binding by the scheduler")
	fs.StringVar(&api.Kubeconfig, "kubeconfig", "", "with --through-api: an existing server (default: an in-process API server)")
	fs.BoolVar(&api.StartScheduler, "start-scheduler", true, "with --through-api: run the scheduler in this process (false when the server runs its own)")
	fs.IntVar(&api.Nodes, "api-nodes", 1000, "with --through-api: nodes")
	fs.IntVar(&api.Pods, "api-pods", 30000, "with --through-api: pods")
	fs.IntVar(&api.Workers, "workers", 64, "with --through-api: concurrent pod creators")
	fs.IntVar(&api.MaxConcurrentBinds, "max-concurrent-binds", 0, "with --through-api: the scheduler's binding pool (0: its default)")
	fs.BoolVar(&api.Backlog, "backlog", true, "with --through-api: create all pods first, then time the scheduler binding the backlog")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := loadtest.StartCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *throughAPI {
		api.Templates, api.Progress = cfg.Templates, os.Stderr
		res, err := schedbench.RunAPI(ctx, api)
		if err != nil {
			return err
		}
		return res.Write(stdout)
	}
	for s := range strings.SplitSeq(*scenarios, ",") {
		n, p, ok := strings.Cut(strings.TrimSpace(s), "x")
		nodes, err1 := strconv.Atoi(n)
		pods, err2 := strconv.Atoi(p)
		if !ok || err1 != nil || err2 != nil || nodes <= 0 || pods <= 0 {
			return fmt.Errorf("bad scenario %q (want NODESxPODS)", s)
		}
		cfg.Scenarios = append(cfg.Scenarios, schedbench.Scenario{Nodes: nodes, Pods: pods})
	}
	all := map[string]schedbench.Mode{}
	for _, m := range schedbench.DefaultModes() {
		all[m.Name] = m
	}
	all["full"] = all["full search"]
	all["rebuild"] = schedbench.RebuildMode()
	for m := range strings.SplitSeq(*modes, ",") {
		mode, ok := all[strings.TrimSpace(m)]
		if !ok {
			return fmt.Errorf("unknown mode %q", m)
		}
		cfg.Modes = append(cfg.Modes, mode)
	}
	cfg.Progress = os.Stderr
	res, err := schedbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := res.WriteFiles(*out); err != nil {
			return err
		}
	}
	return res.Write(stdout)
}
