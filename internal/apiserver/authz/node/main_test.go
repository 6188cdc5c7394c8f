package node

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running (the
// graph's reflectors must stop with Stop).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
