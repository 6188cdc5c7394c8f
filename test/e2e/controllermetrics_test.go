package e2e

import (
	"strings"
	"testing"
	"time"
)

// controllerQueues lists, per controller of `myriad up`, the names its
// work queues export as workqueue_*{name=...} and its sync loops as
// myriad_controller_*{controller=...}: every queue-driven controller runs
// on one runtime (internal/controllers/reconcile), so each must have all.
// nodelifecycle and pod-garbage-collector work on timers, not queues.
var controllerQueues = map[string][]string{
	"serviceaccount":           {"serviceaccount"},
	"root-ca-cert-publisher":   {"root-ca-cert-publisher"},
	"serviceaccount-token":     {"serviceaccount-token"},
	"namespace":                {"namespace"},
	"garbagecollector":         {"garbage_collector_attempt_to_delete", "garbage_collector_attempt_to_orphan"},
	"endpointslice":            {"endpointslice"},
	"endpoint":                 {"endpoint"},
	"replicaset":               {"replicaset"},
	"replicationcontroller":    {"replicationcontroller"},
	"deployment":               {"deployment"},
	"daemonset":                {"daemonset"},
	"job":                      {"job"},
	"cronjob":                  {"cronjob"},
	"statefulset":              {"statefulset"},
	"persistentvolume-binder":  {"persistentvolume-binder"},
	"pvc-protection":           {"pvc-protection"},
	"pv-protection":            {"pv-protection"},
	"resourcequota":            {"resourcequota"},
	"horizontalpodautoscaling": {"horizontalpodautoscaling"},
	"clusterrole-aggregation":  {"clusterrole-aggregation"},
}

// TestControllerMetrics reads /metrics of the shared `myriad up` with the
// admin credentials and checks every controller's queue and sync metrics.
func TestControllerMetrics(t *testing.T) {
	s := shared
	var missing []string
	// The controllers are built (and their metrics registered) shortly
	// after the API serves; poll until then.
	for deadline := time.Now().Add(60 * time.Second); ; {
		out := s.mustKubectl(t, "", "get", "--raw", "/metrics")
		missing = missing[:0]
		for controller, queues := range controllerQueues {
			for _, q := range queues {
				for _, series := range []string{
					`workqueue_adds_total{name="` + q + `"}`,
					`workqueue_depth{name="` + q + `"}`,
					`workqueue_retries_total{name="` + q + `"}`,
					`myriad_controller_syncs_total{controller="` + q + `",result="success"}`,
					`myriad_controller_syncs_total{controller="` + q + `",result="error"}`,
					`myriad_controller_sync_duration_seconds_count{controller="` + q + `"}`,
				} {
					if !hasSeries(out, series) {
						missing = append(missing, controller+": "+series)
					}
				}
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("/metrics lacks %d series:\n%s", len(missing), strings.Join(missing, "\n"))
}

// hasSeries reports whether the exposition text has a sample of series
// (name and labels exactly as written, in the exposition's label order).
func hasSeries(exposition, series string) bool {
	for _, line := range strings.Split(exposition, "\n") {
		if strings.HasPrefix(line, series+" ") {
			return true
		}
	}
	return false
}
