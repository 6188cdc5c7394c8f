package podautoscaler

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine they started (a
// queue, a worker) outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
