package storebench

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestCapacity is the capacity-mode benchmark as a manually run test, since
// the `myriad bench store` subcommand lives elsewhere. It is skipped unless
// MYRIAD_STOREBENCH_PRELOAD is set, e.g.
//
//	MYRIAD_STOREBENCH_PRELOAD=1000000 MYRIAD_STOREBENCH_SIZE=1536 \
//	  go test -run TestCapacity -v -timeout 2h ./internal/bench/storebench/
//
// Optional: MYRIAD_STOREBENCH_COUNT (measured writes, default 20000),
// MYRIAD_STOREBENCH_WRITERS (default 64), MYRIAD_STOREBENCH_DIR (keep the
// store there instead of a temporary directory), MYRIAD_STOREBENCH_CACHE_MB
// (Pebble block cache; default the store's), MYRIAD_STOREBENCH_KEEP_HISTORY
// (compact history to this many revisions every second; default never),
// MYRIAD_STOREBENCH_COMPACT_EVERY_S (compact every this many seconds
// instead), MYRIAD_STOREBENCH_COMPACT_CHUNK (the store's CompactChunk),
// MYRIAD_STOREBENCH_RATE (pace the measured writes at this many per second,
// latency from each write's due time; default as fast as they go),
// MYRIAD_STOREBENCH_VALUES (random, the default, or pods),
// MYRIAD_STOREBENCH_L0_THRESHOLD (the store's L0CompactionThreshold),
// MYRIAD_STOREBENCH_COMPACTION_YIELD (its CompactionYield; -1 turns
// compaction pacing off),
// MYRIAD_STOREBENCH_MEMTABLE_MB (its memtable size),
// MYRIAD_STOREBENCH_UPDATES=1 (measured writes update existing objects
// instead of creating new ones), MYRIAD_STOREBENCH_UPDATE_SET (update only
// the first this many objects), MYRIAD_STOREBENCH_LIST=1 (time a List of
// every object after the reopen).
func TestCapacity(t *testing.T) {
	preload := envInt(t, "MYRIAD_STOREBENCH_PRELOAD", -1)
	if preload < 0 {
		t.Skip("set MYRIAD_STOREBENCH_PRELOAD to run the capacity benchmark")
	}
	cfg := Config{
		Dir:        os.Getenv("MYRIAD_STOREBENCH_DIR"),
		Writers:    envInt(t, "MYRIAD_STOREBENCH_WRITERS", 64),
		ObjectSize: envInt(t, "MYRIAD_STOREBENCH_SIZE", 1536),
		Count:      envInt(t, "MYRIAD_STOREBENCH_COUNT", 20000),
		Preload:    preload,
		Reopen:     true,
		Progress:   os.Stderr,
	}
	cfg.KeepHistory = envInt(t, "MYRIAD_STOREBENCH_KEEP_HISTORY", 0)
	cfg.CompactEvery = time.Duration(envInt(t, "MYRIAD_STOREBENCH_COMPACT_EVERY_S", 0)) * time.Second
	cfg.StoreOptions.CompactChunk = envInt(t, "MYRIAD_STOREBENCH_COMPACT_CHUNK", 0)
	cfg.StoreOptions.RetireInterval = time.Duration(envInt(t, "MYRIAD_STOREBENCH_RETIRE_INTERVAL_MS", 0)) * time.Millisecond
	cfg.StoreOptions.CheckpointWrites = envInt(t, "MYRIAD_STOREBENCH_CHECKPOINT_WRITES", 0)
	cfg.Rate = float64(envInt(t, "MYRIAD_STOREBENCH_RATE", 0))
	cfg.Values = os.Getenv("MYRIAD_STOREBENCH_VALUES")
	cfg.Updates = os.Getenv("MYRIAD_STOREBENCH_UPDATES") == "1"
	cfg.UpdateSet = envInt(t, "MYRIAD_STOREBENCH_UPDATE_SET", 0)
	cfg.ListAll = os.Getenv("MYRIAD_STOREBENCH_LIST") == "1"
	cfg.StoreOptions.L0CompactionThreshold = envInt(t, "MYRIAD_STOREBENCH_L0_THRESHOLD", 0)
	cfg.StoreOptions.CompactionYield = float64(envInt(t, "MYRIAD_STOREBENCH_COMPACTION_YIELD", 0))
	cfg.StoreOptions.MemTableSize = uint64(envInt(t, "MYRIAD_STOREBENCH_MEMTABLE_MB", 0)) << 20
	if mb := envInt(t, "MYRIAD_STOREBENCH_CACHE_MB", 0); mb > 0 {
		cfg.StoreOptions.CacheSize = int64(mb) << 20
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Write(os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
