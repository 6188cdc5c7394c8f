package inmemory

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a handler or pipe goroutine
// running: every exchange must end with its handler.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
