package proxy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
