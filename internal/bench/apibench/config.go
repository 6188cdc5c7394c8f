package apibench

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Config says what to measure. Zero fields take the stated defaults.
type Config struct {
	// Kubeconfig points at the server to measure. Empty: Run starts an
	// in-process control plane on DataDir and a free port, and stops it
	// before returning.
	Kubeconfig string
	// DataDir is the in-process server's data directory. Default: a new
	// temporary directory, removed when Run returns.
	DataDir string
	// Storage and EtcdServers choose the in-process server's backend
	// (`myriad up --storage --etcd-servers`); default the embedded store.
	Storage     string
	EtcdServers []string
	// ServerPID, for a server on this machine given by Kubeconfig, lets Run
	// sample its RSS from /proc during the unfiltered LIST. Ignored for the
	// in-process server (which is this process).
	ServerPID int
	// Logger receives the in-process server's logs. Default: warnings and
	// errors to stderr.
	Logger *slog.Logger

	// Nodes is the number of node names pods are spread over (spec.nodeName)
	// and of Leases in the lease phase. Default 10,000.
	Nodes int
	// Namespaces pods are spread over. Default 100.
	Namespaces int
	// Apps is the number of distinct `app` label values. Default 200
	// (1,000 pods per label at the default pod count).
	Apps int
	// Pods is the number of pods the create phase creates; the read phases
	// measure with them loaded. Default 200,000.
	Pods int
	// Workers is the number of concurrent creating goroutines. Default 32:
	// the fewest that saturate a 2-core server with the client beside it
	// (2026-11-24 sweep: 16 workers 3,020 creates/s, 32 3,424/s, 64
	// 3,370/s, 128 3,290/s; docs/bench/api.md). Past saturation, more
	// workers only queue: p99 grows with the worker count (Little's law),
	// not with anything the server does.
	Workers int

	// ReadWorkers is the number of concurrent readers in the read phase.
	// Default 4.
	ReadWorkers int
	// Gets is the number of measured GETs, and of LISTs by node. Default
	// 10,000 (a p99 over 2,000 calls rests on its 20 slowest).
	Gets int
	// Lists is the number of measured LISTs by label, and by namespace
	// (each returns many pods). Default 200.
	Lists int

	// LeaseWorkers is the number of goroutines renewing Leases. Default 64.
	LeaseWorkers int
	// LeaseDuration is how long the lease phase renews. Default 10 s.
	LeaseDuration time.Duration

	// IdleWait is how long the idle phase waits before reading the
	// server's memory. Default 5 s.
	IdleWait time.Duration

	// TypedClient sends the measured pod creates, GETs and LISTs through
	// client-go's typed clientset, decoding every answer, instead of the
	// same requests with answers checked but not decoded (wireClient).
	// Lease renewals always go through the clientset.
	TypedClient bool

	// Skip turns phases off.
	SkipCreate, SkipReads, SkipListAll, SkipLeases, SkipIdle bool

	// CPUProfileDir, if set, receives one CPU profile of this process per
	// phase (create.pprof, reads.pprof, listall.pprof, leases.pprof): the
	// client's, and the server's too when it is in-process.
	CPUProfileDir string

	// Progress, if set, receives a line every few seconds during long
	// phases.
	Progress io.Writer
}

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Nodes, 10_000)
	def(&c.Namespaces, 100)
	def(&c.Apps, 200)
	def(&c.Pods, 200_000)
	def(&c.Workers, 32)
	def(&c.ReadWorkers, 4)
	def(&c.Gets, 10_000)
	def(&c.Lists, 200)
	def(&c.LeaseWorkers, 64)
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 10 * time.Second
	}
	if c.IdleWait == 0 {
		c.IdleWait = 5 * time.Second
	}
	if c.Nodes < 1 || c.Namespaces < 1 || c.Apps < 1 || c.Pods < 1 || c.Workers < 1 || c.ReadWorkers < 1 ||
		c.Gets < 0 || c.Lists < 0 || c.LeaseWorkers < 1 || c.LeaseDuration < 0 || c.IdleWait < 0 {
		return c, fmt.Errorf("apibench: invalid config: %d nodes, %d namespaces, %d apps, %d pods, %d workers, %d read workers, %d gets, %d lists, %d lease workers, lease duration %s",
			c.Nodes, c.Namespaces, c.Apps, c.Pods, c.Workers, c.ReadWorkers, c.Gets, c.Lists, c.LeaseWorkers, c.LeaseDuration)
	}
	return c, nil
}
