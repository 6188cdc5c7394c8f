package restartbench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunSmall keeps the benchmark working: a few hundred pods, one start.
func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{Dir: t.TempDir(), Pods: 300, Namespaces: 3, Nodes: 10, Writers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.ReadyTime <= 0 || res.StoreBytes <= 0 || res.HeapAfterGC == 0 {
		t.Fatalf("implausible result %+v", res)
	}
	var b strings.Builder
	if err := res.Write(&b); err != nil || !strings.Contains(b.String(), "| 300 |") {
		t.Fatalf("report: %v\n%s", err, b.String())
	}
}
