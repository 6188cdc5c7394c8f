package flowcontrol

import (
	"io"
	"testing"

	"k8s.io/klog/v2"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running.
func TestMain(m *testing.M) {
	// Upstream's dispatcher logs through klog; tests keep quiet.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	goleak.VerifyTestMain(m)
}
