package main

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/bench/storebench"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestStoreBenchFlagsReachConfig parses a line that sets every flag of
// `myriad bench store` to a value other than its default and checks the
// whole Config, so a flag that stops reaching its field (or two flags
// writing one field) fails here rather than silently measuring the
// default.
func TestStoreBenchFlagsReachConfig(t *testing.T) {
	args := []string{
		"--dir", "/tmp/sb", "--writers", "8", "--object-size", "1536", "--count", "3000",
		"--preload", "1000000", "--reads", "-1", "--reopen", "--list-all", "--values", "pods",
		"--updates", "--update-set", "10000", "--rate", "5000",
		"--keep-history", "1000", "--compact-every", "60s",
		"--compact-chunk", "16384", "--retire-interval", "-1ms", "--checkpoint-writes", "50000",
		"--l0-threshold", "4", "--compaction-yield", "-1", "--cache-mb", "16", "--memtable-mb", "8",
	}
	want := storebench.Config{
		Dir: "/tmp/sb", Writers: 8, ObjectSize: 1536, Count: 3000,
		Preload: 1000000, Reads: -1, Reopen: true, ListAll: true, Values: "pods",
		Updates: true, UpdateSet: 10000, Rate: 5000,
		KeepHistory: 1000, CompactEvery: 60 * time.Second,
		StoreOptions: embedded.Options{
			CompactChunk: 16384, RetireInterval: -time.Millisecond, CheckpointWrites: 50000,
			L0CompactionThreshold: 4, CompactionYield: -1, CacheSize: 16 << 20, MemTableSize: 8 << 20,
		},
	}

	// Every flag defined must appear in args: a new flag needs a line here.
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	storeBenchFlags(fs, &storebench.Config{})
	set := strings.Join(args, " ") + " "
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(set, "--"+f.Name+" ") {
			t.Errorf("flag --%s is not in the test's command line", f.Name)
		}
	})

	got, err := parseStoreBenchFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config\n got %+v\nwant %+v", got, want)
	}
}

func TestStoreBenchFlagDefaults(t *testing.T) {
	got, err := parseStoreBenchFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The store's knobs stay zero: the embedded store fills its defaults.
	want := storebench.Config{Writers: 64, ObjectSize: 1024, Count: 20000, Values: "random"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config\n got %+v\nwant %+v", got, want)
	}
}

func TestStoreBenchFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"negative cache", []string{"--cache-mb", "-1"}},
		{"negative memtable", []string{"--memtable-mb", "-8"}},
		{"bad duration", []string{"--compact-every", "60"}},
		{"stray argument", []string{"--count", "10", "extra"}},
		{"unknown flag", []string{"--size", "1536"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseStoreBenchFlags(tc.args); err == nil {
				t.Errorf("%q parsed", tc.args)
			}
		})
	}
}
