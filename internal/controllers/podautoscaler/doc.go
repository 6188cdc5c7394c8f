// Package podautoscaler is the horizontal pod autoscaler controller
// (kube-controller-manager's "horizontalpodautoscaling"): every sync
// period (15 s) it reads each autoscaling/v2 HorizontalPodAutoscaler's
// target through the scale subresource, proposes a replica count from its
// metrics, and writes the target's scale and the HPA's status.
//
//	controller.go  queue (one fixed interval per HPA), handlers, Options
//	autoscale.go   one reconcile: scale target, bounds, rescale, status and
//	               conditions (AbleToScale, ScalingActive, ScalingLimited)
//	proposals.go   one proposal per metric (Resource, ContainerResource,
//	               Pods, Object, External) and the highest of them
//	replicas.go    the replica calculator: tolerance, missing, unready and
//	               ignored pods, utilization of requests
//	normalize.go   stabilization windows and rate policies (spec.behavior),
//	               or the default rules without one; the per-HPA history
//	metrics.go     MetricsSource, and RESTMetrics reading metrics.k8s.io,
//	               custom.metrics.k8s.io and external.metrics.k8s.io
//
// The semantics, reasons and messages are upstream's (v1.34), so kubectl
// describe hpa reads the same. Upstream leaves status.observedGeneration
// unset in v1.34; this controller sets it to the HPA's generation.
//
// Metrics come through the API server's aggregated metrics APIs. Until
// Myriad aggregates APIs (issue 22) those are not served, so resource
// metrics fail with "the server could not find the requested resource
// (get pods.metrics.k8s.io)" and ScalingActive is False; the bounds
// (minReplicas, maxReplicas) are still enforced, as upstream does without
// metrics. The hollow nodes of internal/sim can serve metrics.k8s.io
// (myriad sim --metrics-api-address) for when aggregation lands.
package podautoscaler
