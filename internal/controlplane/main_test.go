package controlplane

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running: a
// control plane that stops must stop everything it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
