package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/myriad-k8s/myriad/internal/bench/storebench"
)

func runBench(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: myriad bench store|api|restart [flags]")
	}
	switch args[0] {
	case "store":
		return runStoreBench(ctx, args[1:], stdout)
	case "api":
		return runAPIBench(ctx, args[1:], stdout)
	case "restart":
		return runRestartBench(ctx, args[1:], stdout)
	}
	return fmt.Errorf("unknown bench scenario %q (available: store, api, restart)", args[0])
}

func runStoreBench(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("myriad bench store", flag.ContinueOnError)
	var cfg storebench.Config
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the store (default: a temporary directory, removed afterwards)")
	fs.IntVar(&cfg.Writers, "writers", 64, "concurrent writers")
	fs.IntVar(&cfg.ObjectSize, "object-size", 1024, "bytes per object")
	fs.IntVar(&cfg.Count, "count", 20000, "measured writes")
	fs.IntVar(&cfg.Preload, "preload", 0, "objects written before measuring (capacity mode)")
	fs.IntVar(&cfg.Reads, "reads", 0, "measured random gets after the writes")
	fs.BoolVar(&cfg.Reopen, "reopen", false, "close and reopen the store and report the time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "myriad-storebench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	cfg.Progress = os.Stderr
	res, err := storebench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return res.Write(stdout)
}
