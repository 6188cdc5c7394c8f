package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/bench/restartbench"
)

func runRestartBench(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("myriad bench restart", flag.ContinueOnError)
	var cfg restartbench.Config
	fs.StringVar(&cfg.Dir, "data-dir", "", "data directory to load and start on (default: a temporary directory, removed afterwards)")
	fs.IntVar(&cfg.Pods, "pods", 1_000_000, "pods written into the store before the start")
	fs.BoolVar(&cfg.SkipLoad, "skip-load", false, "start on what --data-dir already holds")
	fs.IntVar(&cfg.Namespaces, "namespaces", 1000, "namespaces the pods spread over")
	fs.IntVar(&cfg.Nodes, "nodes", 10000, "node names the pods are bound to")
	fs.StringVar(&cfg.Storage, "storage", "embedded", "storage backend to load into and start on: embedded (in --data-dir) or etcd")
	fs.Func("etcd-servers", "comma-separated etcd URLs (with --storage=etcd)", func(v string) error {
		cfg.EtcdServers = splitList(v)
		return nil
	})
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run (with --skip-load: of the start) to this file")
	applyMemoryLimit := memoryLimitFlag(fs) // the server runs in this process
	if err := fs.Parse(args); err != nil {
		return err
	}
	stopProfile, err := loadtest.StartCPUProfile(*cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if err := applyMemoryLimit(); err != nil {
		return err
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "myriad-restartbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	if cfg.SkipLoad {
		cfg.Pods = 0
	}
	cfg.Progress = os.Stderr
	res, err := restartbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return res.Write(stdout)
}
