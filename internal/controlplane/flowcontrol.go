package controlplane

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/flowcontrol"
)

// FlowControlOptions configure API Priority and Fairness (package
// apiserver/flowcontrol). The zero value is upstream's default: on.
type FlowControlOptions struct {
	// Disabled turns APF off (--enable-priority-and-fairness=false): the
	// max-in-flight limits apply instead.
	Disabled bool
	// MemoryRejectThresholdBytes, when > 0, answers expensive lists 429
	// while the heap holds more than this (--memory-reject-threshold).
	MemoryRejectThresholdBytes uint64
	// ListBudgetPerCore is the bytes of LIST results in flight per core
	// (default 4 MiB; flowcontrol.EstimatorConfig): big lists beyond it
	// wait their turn.
	ListBudgetPerCore int64
}

// flowControl is APF for one control plane, or nil when off.
type flowControl struct{ c *flowcontrol.Controller }

// newFlowControl builds APF over api's caches; the server's seats are
// the max-in-flight limits' sum, as upstream's.
func newFlowControl(cfg Config, api *apiserver.Server, metrics prometheus.Registerer, log *slog.Logger) (*flowControl, error) {
	if cfg.FlowControl.Disabled {
		return nil, nil
	}
	c, err := flowcontrol.New(flowcontrol.Config{
		API: api, Objects: api.Objects(),
		ServerConcurrencyLimit: cfg.MaxRequestsInflight + cfg.MaxMutatingRequestsInflight,
		Estimator:              flowcontrol.EstimatorConfig{ListBudgetPerCore: cfg.FlowControl.ListBudgetPerCore},
		Reject:                 flowcontrol.RejectConfig{MemoryThresholdBytes: cfg.FlowControl.MemoryRejectThresholdBytes},
		Metrics:                metrics,
		Logger:                 log.With("component", "flowcontrol"),
	})
	if err != nil {
		return nil, err
	}
	return &flowControl{c: c}, nil
}

func (f *flowControl) start(ctx context.Context) error {
	if f == nil {
		return nil
	}
	return f.c.Start(ctx)
}

func (f *flowControl) stop() {
	if f != nil {
		f.c.Stop()
	}
}

// filter is the chain's limiter: APF, or nil for max-in-flight.
func (f *flowControl) filter() filters.Filter {
	if f == nil {
		return nil
	}
	return f.c.Filter
}

// install serves the /debug/api_priority_and_fairness/ dumps.
func (f *flowControl) install(mux *http.ServeMux) {
	if f != nil {
		mux.Handle("/debug/api_priority_and_fairness/", f.c.DebugHandler())
	}
}
