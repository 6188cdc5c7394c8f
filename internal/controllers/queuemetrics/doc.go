// Package queuemetrics exports client-go work queue metrics under
// upstream's names (workqueue_depth, workqueue_adds_total, ...; label
// "name"), registered on a given prometheus.Registerer rather than a
// global one, so existing controller-manager dashboards work.
package queuemetrics
