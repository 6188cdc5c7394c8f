package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestEventTTL: events expire --event-ttl after their last write, through
// either events API, and a restarted server expires what it finds from the
// events' own timestamps.
func TestEventTTL(t *testing.T) {
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := startCommand("apiserver", dir, port, "--event-ttl=3s")
	if err != nil {
		t.Fatal(err)
	}
	running := s
	defer func() {
		if running != nil {
			running.kill()
		}
	}()
	now := time.Now().UTC().Format(time.RFC3339)
	coreEvent := `apiVersion: v1
kind: Event
metadata: {name: core, namespace: default}
involvedObject: {kind: Pod, name: p, namespace: default}
reason: Tested
message: m
type: Normal
firstTimestamp: "` + now + `"
lastTimestamp: "` + now + `"
`
	s.mustKubectl(t, coreEvent, "create", "-f", "-")
	s.mustKubectl(t, `apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: modern, namespace: default}
eventTime: "`+time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")+`"
reportingController: example.com/ctl
reportingInstance: i
action: Test
reason: Tested
regarding: {kind: Pod, name: p, namespace: default}
type: Normal
`, "create", "-f", "-")
	if out := s.mustKubectl(t, "", "get", "events", "-o", "name"); !strings.Contains(out, "event/core") || !strings.Contains(out, "event/modern") {
		t.Fatalf("events not there: %q", out)
	}
	waitFor(t, 20*time.Second, func() bool {
		return strings.TrimSpace(s.mustKubectl(t, "", "get", "events", "-o", "name")) == ""
	})
	metrics := s.mustKubectl(t, "", "get", "--raw", "/metrics")
	if !strings.Contains(metrics, `myriad_expiry_expired_keys_total{prefix="/core/events/"} 2`) {
		t.Errorf("expired counter not 2 in /metrics")
	}

	// Written, then the server is down past the TTL: the restarted server
	// expires it at once from its timestamps, not a full TTL (20 s) after
	// starting.
	s.mustKubectl(t, coreEvent, "create", "-f", "-")
	running = nil
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(21 * time.Second)
	if s, err = startCommand("apiserver", dir, port, "--event-ttl=20s"); err != nil {
		t.Fatal(err)
	}
	running = s
	start := time.Now()
	waitFor(t, 30*time.Second, func() bool {
		return strings.TrimSpace(s.mustKubectl(t, "", "get", "events", "-o", "name")) == ""
	})
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the restarted server took %v to expire an event already past its TTL", d)
	}
}
