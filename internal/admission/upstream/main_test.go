package upstream

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running (the
// in-process transport's handler goroutines must end with their bodies).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
