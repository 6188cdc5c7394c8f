package apibench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunSmall runs every phase at a tiny size against an in-process
// server, with either client, so the benchmark keeps working.
func TestRunSmall(t *testing.T) {
	for _, typed := range []bool{false, true} {
		t.Run(map[bool]string{false: "wire", true: "typed"}[typed], func(t *testing.T) { testRunSmall(t, typed) })
	}
}

func testRunSmall(t *testing.T, typed bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{
		DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Pods: 200, Nodes: 20, Namespaces: 4, Apps: 5, Workers: 8,
		Gets: 50, Lists: 10, LeaseWorkers: 4, LeaseDuration: 300 * time.Millisecond, IdleWait: time.Millisecond,
		TypedClient: typed,
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.TypedClient != typed {
		t.Fatalf("TypedClient = %v, want %v", res.TypedClient, typed)
	}
	if !res.InProcess || res.Create == nil || res.Create.Calls != 200 || res.Create.PerSec <= 0 {
		t.Fatalf("create: %+v", res.Create)
	}
	for _, s := range []*Stat{res.Create, res.Get, res.ListByNode, res.ListByLabel, res.ListByNamespace, res.Leases} {
		if s == nil || s.Calls == 0 || s.P50 <= 0 || s.P90 < s.P50 || s.P99 < s.P90 || s.Max < s.P99 || s.ServerCPU <= 0 {
			t.Fatalf("implausible stat %+v", s)
		}
	}
	// 200 pods: 10 per node, 40 per app label, 50 per namespace.
	if res.Get.Items != 1 || res.ListByNode.Items != 10 || res.ListByLabel.Items != 40 || res.ListByNamespace.Items != 50 {
		t.Fatalf("items per call: get %v, node %v, label %v, namespace %v",
			res.Get.Items, res.ListByNode.Items, res.ListByLabel.Items, res.ListByNamespace.Items)
	}
	if len(res.ListAll) != 2 || res.ListAll[0].Bytes <= 0 || res.ListAll[1].Bytes <= res.ListAll[0].Bytes || res.ListAll[0].PeakRSS <= 0 {
		t.Fatalf("list all: %+v", res.ListAll)
	}
	if res.IdleRSS <= 0 || res.IdleHeap <= 0 || res.PeakRSS <= 0 {
		t.Fatalf("memory: idle RSS %d, heap %d, peak %d", res.IdleRSS, res.IdleHeap, res.PeakRSS)
	}
	var out bytes.Buffer
	if err := res.Write(&out); err != nil || !strings.Contains(out.String(), "| create pods | 200 |") || !strings.Contains(out.String(), " µs |") {
		t.Fatalf("report %q, %v", out.String(), err)
	}
	dir := t.TempDir()
	if err := res.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(raw, &back); err != nil || back.Create.Calls != 200 {
		t.Fatalf("results.json: %v, %s", err, raw)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{DataDir: t.TempDir(), Pods: 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil {
		t.Fatal("Run with a cancelled context succeeded")
	}
}

func TestQuantile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i))
	}
	s := newStat("x", lat, time.Second)
	if s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.Max != 100 || s.PerSec != 100 {
		t.Fatalf("%+v", s)
	}
}

func TestSetCPU(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name                string
		before, after       cpuReading
		wantServer, wantCli time.Duration
	}{
		{"both", cpuReading{server: 10 * ms, self: 4 * ms, serverOK: true, selfOK: true},
			cpuReading{server: 30 * ms, self: 8 * ms, serverOK: true, selfOK: true}, 2 * ms, 400 * time.Microsecond},
		{"server unreadable", cpuReading{self: 4 * ms, selfOK: true}, cpuReading{self: 14 * ms, selfOK: true}, 0, ms},
		{"in-process: server only", cpuReading{server: 10 * ms, serverOK: true}, cpuReading{server: 20 * ms, serverOK: true}, ms, 0},
		{"read failed after", cpuReading{server: 10 * ms, serverOK: true, selfOK: true}, cpuReading{}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Stat{Calls: 10}
			s.setCPU(tc.before, tc.after)
			if s.CPUPerCall != tc.wantServer || s.ClientCPUPerCall != tc.wantCli {
				t.Fatalf("server %v, client %v per call; want %v, %v", s.CPUPerCall, s.ClientCPUPerCall, tc.wantServer, tc.wantCli)
			}
		})
	}
	s := &Stat{}
	s.setCPU(cpuReading{serverOK: true, selfOK: true}, cpuReading{server: ms, self: ms, serverOK: true, selfOK: true})
	if s.CPUPerCall != 0 || s.ClientCPUPerCall != 0 {
		t.Fatalf("no calls: %+v", s)
	}
}

func TestMetricValue(t *testing.T) {
	text := "# HELP process_resident_memory_bytes x\nprocess_resident_memory_bytes 1.2345e+08\ngo_memstats_heap_alloc_bytes 42\n"
	if v := metricValue(text, "process_resident_memory_bytes"); v != 123450000 {
		t.Fatalf("rss %d", v)
	}
	if v := metricValue(text, "missing"); v != 0 {
		t.Fatalf("missing %d", v)
	}
}
