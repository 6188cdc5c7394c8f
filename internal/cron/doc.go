// Package cron parses the standard 5-field cron schedules CronJobs use and
// computes their next activation, with the semantics of robfig/cron's
// ParseStandard, which kube-controller-manager uses: minute, hour,
// day-of-month, month (1-12 or JAN-DEC) and day-of-week (0-6 or SUN-SAT;
// 7 is rejected, as robfig/cron does); "*", "?", lists, ranges and steps
// ("a-b/n", "*/n", "a/n" meaning a to the field's maximum); the
// descriptors @yearly/@annually, @monthly, @weekly, @daily/@midnight and
// @hourly; an optional "CRON_TZ=Zone " or "TZ=Zone " prefix. When both day
// fields are restricted (neither is "*" or "?" without a step) a day
// matches if either does, as in classic cron. "@every" is not supported.
package cron
