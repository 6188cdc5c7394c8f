// Package metrics defines the scheduler's Prometheus metrics with upstream
// kube-scheduler's names and labels (scheduler_schedule_attempts_total,
// scheduler_scheduling_attempt_duration_seconds, scheduler_pending_pods,
// scheduler_e2e_scheduling_duration_seconds, scheduler_preemption_victims),
// registered on a caller's Registerer, never the global one.
package metrics
