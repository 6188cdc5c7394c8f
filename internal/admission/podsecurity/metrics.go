package podsecurity

import (
	"fmt"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// recorder is the library's metrics.Recorder over client_golang, with
// upstream's metric names and labels. (The library's own recorder is built
// on k8s.io/component-base/metrics and its legacy registry, which Myriad's
// /metrics does not serve.)
type recorder struct {
	evaluations, exemptions, errors *prometheus.CounterVec
	// cached holds the evaluation counters by their labels: every pod
	// create is counted, and a struct key is cheaper than CounterVec's
	// validation and hashing of seven label values (upstream's recorder
	// caches them too).
	cached sync.Map // evaluationLabels -> prometheus.Counter
}

type evaluationLabels struct {
	decision, level, version, mode, operation, resource, subresource string
}

var _ metrics.Recorder = (*recorder)(nil)

func newRecorder(reg prometheus.Registerer) (*recorder, error) {
	r := &recorder{
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pod_security_evaluations_total",
			Help: "Number of policy evaluations that occurred, not counting ignored or exempt requests.",
		}, []string{"decision", "policy_level", "policy_version", "mode", "request_operation", "resource", "subresource"}),
		exemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pod_security_exemptions_total",
			Help: "Number of exempt requests, not counting ignored or out of scope requests.",
		}, []string{"request_operation", "resource", "subresource"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pod_security_errors_total",
			Help: "Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted profile being used for evaluation.",
		}, []string{"fatal", "request_operation", "resource", "subresource"}),
	}
	if reg == nil {
		return r, nil
	}
	for _, c := range []prometheus.Collector{r.evaluations, r.exemptions, r.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("podsecurity: registering metrics: %w", err)
		}
	}
	return r, nil
}

func (r *recorder) RecordEvaluation(d metrics.Decision, p psapi.LevelVersion, mode metrics.Mode, a psapi.Attributes) {
	version := "latest"
	if !p.Version.Latest() && p.Level != psapi.LevelPrivileged {
		if cur := psapi.GetAPIVersion(); cur.Older(p.Version) {
			version = "future"
		} else {
			version = p.Version.String()
		}
	}
	l := evaluationLabels{string(d), string(p.Level), version, string(mode),
		operationLabel(a.GetOperation()), resourceLabel(a), a.GetSubresource()}
	if c, ok := r.cached.Load(l); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := r.evaluations.WithLabelValues(l.decision, l.level, l.version, l.mode, l.operation, l.resource, l.subresource)
	r.cached.Store(l, c)
	c.Inc()
}

func (r *recorder) RecordExemption(a psapi.Attributes) {
	r.exemptions.WithLabelValues(operationLabel(a.GetOperation()), resourceLabel(a), a.GetSubresource()).Inc()
}

func (r *recorder) RecordError(fatal bool, a psapi.Attributes) {
	f := "false"
	if fatal {
		f = "true"
	}
	r.errors.WithLabelValues(f, operationLabel(a.GetOperation()), resourceLabel(a), a.GetSubresource()).Inc()
}

func resourceLabel(a psapi.Attributes) string {
	switch a.GetResource().GroupResource() {
	case podsResource:
		return "pod"
	case namespacesResource:
		return "namespace"
	}
	return "controller"
}

func operationLabel(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create:
		return "create"
	case admissionv1.Update:
		return "update"
	}
	return strings.ToLower(string(op))
}
