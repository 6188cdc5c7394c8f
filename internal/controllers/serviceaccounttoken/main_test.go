package serviceaccounttoken

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine they started (an
// informer, a queue, a worker) outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
