// Package job is the Job controller ("job" in kube-controller-manager),
// with the TTL-after-finished cleanup ("ttl-after-finished" upstream)
// folded in. It runs pods from a Job's template until spec.completions
// succeed (or, with completions unset, until one succeeds and the rest
// stop), at most spec.parallelism at a time; it recreates failed pods with
// upstream's exponential backoff (10 s doubling, capped at 6 min) until
// more than spec.backoffLimit have failed; it enforces
// activeDeadlineSeconds and suspend; it sets the Complete / Failed
// (BackoffLimitExceeded, DeadlineExceeded) and Suspended conditions,
// startTime, completionTime and the active/ready/succeeded/failed counts;
// and it deletes a finished Job (foreground, so its pods go first)
// ttlSecondsAfterFinished after it finished. Pods carry the job-name and
// controller-uid labels (both the batch.kubernetes.io/ and legacy forms).
//
// Myriad's API server serves batch/v1 (internal/registry/job.go: it
// defaults completions, parallelism and backoffLimit and generates the
// selector on batch.kubernetes.io/controller-uid with the job-name and
// controller-uid template labels, which podTemplate only fills in for
// Jobs written before that). The manager also runs against other API
// servers, so Warm (called by the manager before it leads) waits until
// discovery shows jobs before it registers the handlers and starts the Job
// informer: an API without Jobs costs a discovery call every 30 s and no
// failing reflector.
//
// Simplifications against upstream: succeeded and failed pods are counted
// from the pod cache (upstream's tracking finalizers, which survive pod
// deletion, are not used), so deleting finished pods by hand loses their
// count; podFailurePolicy, successPolicy, backoffLimitPerIndex and
// podReplacementPolicy are not implemented.
//
// completionMode Indexed: one pod per index in [0, completions), lowest
// pending indexes first up to parallelism, each named "<job>-<index>-…"
// with hostname "<job>-<index>", the batch.kubernetes.io/job-completion-index
// annotation and label, and JOB_COMPLETION_INDEX in every container from the
// downward API; an index is done when one of its pods succeeded, and
// status.completedIndexes lists them ("0-3,7").
package job
