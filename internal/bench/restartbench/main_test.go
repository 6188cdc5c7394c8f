package restartbench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running: whatever
// the package starts, it must also stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
