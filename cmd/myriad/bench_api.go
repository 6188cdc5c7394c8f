package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/myriad-k8s/myriad/internal/bench/apibench"
)

func runAPIBench(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("myriad bench api", flag.ContinueOnError)
	apiPhases := []string{"create", "reads", "listall", "leases", "idle"}
	var cfg apibench.Config
	var phases, out string
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the server to measure (default: start an in-process control plane)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "in-process server's data directory (default: a temporary directory, removed afterwards)")
	fs.StringVar(&cfg.Storage, "storage", "embedded", "in-process server's storage backend: embedded or etcd")
	fs.Func("etcd-servers", "comma-separated etcd URLs for the in-process server (with --storage=etcd)", func(v string) error {
		cfg.EtcdServers = splitList(v)
		return nil
	})
	fs.IntVar(&cfg.ServerPID, "server-pid", 0, "PID of a local server given by --kubeconfig, to sample its RSS during the unfiltered LIST")
	fs.StringVar(&out, "out", "", "directory for report.md and results.json")
	fs.StringVar(&phases, "phases", strings.Join(apiPhases, ","), "phases to run, comma-separated: "+strings.Join(apiPhases, ","))
	fs.IntVar(&cfg.Pods, "pods", 200000, "pods created (and loaded for the read phase)")
	fs.IntVar(&cfg.Nodes, "nodes", 10000, "node names pods are spread over; also the number of Leases")
	fs.IntVar(&cfg.Namespaces, "namespaces", 100, "namespaces pods are spread over")
	fs.IntVar(&cfg.Apps, "apps", 200, "distinct app label values")
	fs.IntVar(&cfg.Workers, "workers", 32, "concurrent creating workers (32 saturate a 2-core machine; more only queue)")
	fs.IntVar(&cfg.ReadWorkers, "read-workers", 4, "concurrent readers")
	fs.IntVar(&cfg.Gets, "gets", 10000, "measured GETs, and LISTs by node (a p99 of 2,000 calls rests on its 20 slowest)")
	fs.IntVar(&cfg.Lists, "lists", 200, "measured LISTs by label, and by namespace")
	fs.IntVar(&cfg.LeaseWorkers, "lease-workers", 64, "concurrent Lease renewers")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", 0, "how long to renew Leases (default 10s)")
	fs.DurationVar(&cfg.IdleWait, "idle-wait", 0, "wait before reading idle memory (default 5s)")
	fs.BoolVar(&cfg.TypedClient, "typed-client", false, "send the measured pod requests through client-go's typed clientset and decode every answer (default: the same requests, answers checked but not decoded)")
	fs.StringVar(&cfg.CPUProfileDir, "cpuprofile-dir", "", "write a CPU profile of this process (the client; the server too when in-process) per phase here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	on := map[string]bool{}
	for p := range strings.SplitSeq(phases, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		known := false
		for _, a := range apiPhases {
			known = known || a == p
		}
		if !known {
			return fmt.Errorf("unknown phase %q (available: %s)", p, strings.Join(apiPhases, ","))
		}
		on[p] = true
	}
	cfg.SkipCreate, cfg.SkipReads, cfg.SkipListAll = !on["create"], !on["reads"], !on["listall"]
	cfg.SkipLeases, cfg.SkipIdle = !on["leases"], !on["idle"]
	cfg.Progress = os.Stderr
	res, err := apibench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if out != "" {
		if err := res.WriteFiles(out); err != nil {
			return err
		}
	}
	return res.Write(stdout)
}
