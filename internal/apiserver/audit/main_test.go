package audit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines running —
// except lumberjack's backup-removal goroutine, which lumberjack v2 starts
// at the first rotation and never stops (the same in kube-apiserver).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
