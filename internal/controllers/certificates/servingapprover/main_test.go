package servingapprover

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine they started outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
