package benchutil

import (
	"testing"

	"github.com/myriad-k8s/myriad/internal/procstat"
)

// ReportCPU, deferred when a benchmark's timed loop starts, reports the
// process's CPU time per operation ("cpu-µs/op", client and server
// together when both run in the process): steadier than ns/op on a
// shared machine, where wall time mostly measures the other tenants.
func ReportCPU(b *testing.B) func() {
	start, err := procstat.ReadCPU(procstat.Self)
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		end, err := procstat.ReadCPU(procstat.Self)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(end-start)/float64(b.N)/1e3, "cpu-µs/op")
	}
}
