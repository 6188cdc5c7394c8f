package embedded

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the crash test's child when asked to (crash_test.go), and
// otherwise fails the package if a test leaves goroutines running: Close
// must stop and join everything the store started.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
