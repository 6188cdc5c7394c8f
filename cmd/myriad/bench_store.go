package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/myriad-k8s/myriad/internal/bench/storebench"
)

func runStoreBench(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseStoreBenchFlags(args)
	if err != nil {
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

// parseStoreBenchFlags turns `myriad bench store`'s command line into the
// benchmark's Config.
func parseStoreBenchFlags(args []string) (storebench.Config, error) {
	fs := flag.NewFlagSet("myriad bench store", flag.ContinueOnError)
	var cfg storebench.Config
	finish := storeBenchFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return storebench.Config{}, err
	}
	if fs.NArg() > 0 {
		return storebench.Config{}, fmt.Errorf("myriad bench store: unexpected arguments %q", fs.Args())
	}
	if err := finish(); err != nil {
		return storebench.Config{}, err
	}
	return cfg, nil
}

// storeBenchFlags defines every knob of the store benchmark on fs, each
// bound to its field of cfg. The returned finish, called after fs.Parse,
// sets the fields that flags give in other units (MiB → bytes).
//
// The store's own knobs (cfg.StoreOptions) default to 0, which leaves the
// embedded store's default in place; the help strings state those defaults
// as embedded.Options documents them.
func storeBenchFlags(fs *flag.FlagSet, cfg *storebench.Config) (finish func() error) {
	// What is written and measured.
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the store; an existing store there is reused (default: a temporary directory, removed afterwards)")
	fs.IntVar(&cfg.Writers, "writers", 64, "concurrent writers of the measured writes and reads")
	fs.IntVar(&cfg.ObjectSize, "object-size", 1024, "bytes per object (with --values random)")
	fs.IntVar(&cfg.Count, "count", 20000, "measured writes")
	fs.IntVar(&cfg.Preload, "preload", 0, "objects written before measuring (capacity mode)")
	fs.IntVar(&cfg.Reads, "reads", 0, "measured random gets after the writes (default 0: 10,000; negative: none)")
	fs.BoolVar(&cfg.Reopen, "reopen", false, "close and reopen the store after the run and report the time")
	fs.BoolVar(&cfg.ListAll, "list-all", false, "with --reopen, time a List of every object in the reopened store")
	fs.StringVar(&cfg.Values, "values", "random", "object values: random (incompressible, --object-size bytes) or pods (1.5 KB Pods encoded as the API server stores them)")
	fs.BoolVar(&cfg.Updates, "updates", false, "measured writes update random existing objects (the store keeps its size) instead of creating new ones")
	fs.IntVar(&cfg.UpdateSet, "update-set", 0, "with --updates, update only the first N objects (default 0: all), so stores of different sizes get the same writes")
	fs.Float64Var(&cfg.Rate, "rate", 0, "pace the measured writes at this many per second, latency from each write's due time (default 0: as fast as they go)")
	fs.IntVar(&cfg.KeepHistory, "keep-history", 0, "compact the store's history down to this many revisions every --compact-every during the run (default 0: never compact)")
	fs.DurationVar(&cfg.CompactEvery, "compact-every", 0, "with --keep-history, how often to compact, e.g. 60s (default 0: every second; the API server compacts every 5m)")

	// The embedded store's tuning (embedded.Options).
	fs.IntVar(&cfg.StoreOptions.CompactChunk, "compact-chunk", 0, "obsolete writes a compaction deletes per batch (default 0: the store's, 262144)")
	fs.DurationVar(&cfg.StoreOptions.RetireInterval, "retire-interval", 0, "least time between two rounds of deleting obsolete history; negative: every compaction deletes (default 0: the store's, 1m)")
	fs.IntVar(&cfg.StoreOptions.CheckpointWrites, "checkpoint-writes", 0, "writes the key log may hold before the key index is checkpointed (default 0: the store's, 100000)")
	fs.IntVar(&cfg.StoreOptions.L0CompactionThreshold, "l0-threshold", 0, "Pebble's L0 compaction threshold: compactions start at half this many sublevels, writes stop at four times (default 0: the store's, 16)")
	fs.Float64Var(&cfg.StoreOptions.CompactionYield, "compaction-yield", 0, "while L0 is shallow, a compaction sleeps this many times as long as each block took; -1 turns pacing off (default 0: the store's, 3)")
	cacheMB := fs.Int("cache-mb", 0, "Pebble block cache in MiB (default 0: the store's, 64)")
	memtableMB := fs.Int("memtable-mb", 0, "Pebble memtable size in MiB (default 0: the store's, 64)")
	return func() error {
		if *cacheMB < 0 || *memtableMB < 0 {
			return fmt.Errorf("myriad bench store: --cache-mb %d and --memtable-mb %d must not be negative", *cacheMB, *memtableMB)
		}
		cfg.StoreOptions.CacheSize = int64(*cacheMB) << 20
		cfg.StoreOptions.MemTableSize = uint64(*memtableMB) << 20
		return nil
	}
}
