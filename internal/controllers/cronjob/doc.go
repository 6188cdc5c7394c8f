// Package cronjob is the CronJob controller ("cronjob" in
// kube-controller-manager, its v2 design): at each time the schedule
// (package cron; spec.timeZone or a TZ prefix) names, it creates a Job
// "<cronjob>-<minutes since the epoch>" from spec.jobTemplate, owned by the
// CronJob and annotated with batch.kubernetes.io/cronjob-scheduled-timestamp.
// It honours suspend, startingDeadlineSeconds (a start later than that is
// skipped; more than 100 missed starts are reported and only the latest is
// run), concurrencyPolicy (Allow, Forbid: skip while one runs, Replace:
// delete the running ones first), and successfulJobsHistoryLimit (default
// 3) / failedJobsHistoryLimit (default 1), deleting the oldest finished Jobs
// beyond them. Status keeps active, lastScheduleTime and
// lastSuccessfulTime. It requeues itself for the next activation, so no
// periodic resync is needed.
//
// Like the Job controller it starts its informers only once the API
// serves batch/v1 cronjobs and jobs (see Warm). Myriad's API server
// validates schedules with package cron too (internal/registry/cronjob.go),
// so a CronJob the controller cannot parse only comes from another server.
package cronjob
