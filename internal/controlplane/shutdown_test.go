package controlplane

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestShutdownClockLogsOnlyAfterBegin(t *testing.T) {
	var buf bytes.Buffer
	clock := &shutdownClock{log: slog.New(slog.NewTextHandler(&buf, nil))}
	var ran []string
	clock.stop("early", func() { ran = append(ran, "early") })
	clock.begin()
	clock.stop("store", func() { ran = append(ran, "store") })

	if strings.Join(ran, ",") != "early,store" {
		t.Fatalf("ran %v, want both parts stopped", ran)
	}
	out := buf.String()
	if strings.Contains(out, "part=early") {
		t.Errorf("a part stopped before the shutdown was logged: %q", out)
	}
	if !strings.Contains(out, "msg=stopped part=store after=") {
		t.Errorf("the store's stop was not logged: %q", out)
	}
}
