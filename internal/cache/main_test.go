package cache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running: Stop
// must stop and join everything a cache started, its watchers' included.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
