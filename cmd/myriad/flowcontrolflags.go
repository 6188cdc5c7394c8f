package main

import (
	"flag"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/myriad-k8s/myriad/internal/controlplane"
)

// flowControlFlags are API Priority and Fairness's flags, shared by
// `myriad up` and `myriad apiserver`.
func flowControlFlags(fs *flag.FlagSet, cfg *controlplane.Config) {
	fs.BoolFunc("enable-priority-and-fairness", "API Priority and Fairness (FlowSchemas, PriorityLevelConfigurations) instead of the max-in-flight limits; default true", func(v string) error {
		on, err := strconv.ParseBool(v)
		cfg.FlowControl.Disabled = !on
		return err
	})
	fs.Func("memory-reject-threshold", "with priority and fairness: answer expensive lists 429 at once while the Go heap holds more than this (a quantity such as 2Gi; default off)", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			return fmt.Errorf("want a non-negative quantity such as 2Gi, got %q", v)
		}
		cfg.FlowControl.MemoryRejectThresholdBytes = uint64(q.Value())
		return nil
	})
	fs.Func("apf-list-budget-per-core", "with priority and fairness: bytes of large LIST answers in flight per core; more wait their turn (a quantity; default 4Mi)", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("want a positive quantity such as 4Mi, got %q", v)
		}
		cfg.FlowControl.ListBudgetPerCore = q.Value()
		return nil
	})
}
