package upstream

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// metricPrefixes are the families upstream's admission plugins register
// in component-base's legacyregistry: the webhooks'
// (apiserver_admission_webhook_admission_duration_seconds,
// apiserver_admission_webhook_rejection_count, ...), match conditions',
// ValidatingAdmissionPolicy's, CEL's and the webhook client's.
var metricPrefixes = []string{
	"apiserver_admission_",
	"apiserver_validating_admission_policy_",
	"apiserver_cel_",
	"apiserver_webhooks_",
}

// MetricsCollector re-exposes those families, as legacyregistry holds
// them, to a Myriad registry (so they appear on /metrics under upstream's
// names). It is an unchecked collector: it describes nothing in advance,
// since the families appear as the plugins first record them.
func MetricsCollector() prometheus.Collector { return PrefixCollector(metricPrefixes...) }

// PrefixCollector re-exposes the legacyregistry families whose names
// start with one of prefixes, as MetricsCollector does for admission's
// (flow control's apiserver_flowcontrol_ families use it too).
func PrefixCollector(prefixes ...string) prometheus.Collector { return legacyCollector{prefixes} }

type legacyCollector struct{ prefixes []string }

func (legacyCollector) Describe(chan<- *prometheus.Desc) {}

func (c legacyCollector) Collect(ch chan<- prometheus.Metric) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil && len(families) == 0 {
		return
	}
	for _, f := range families {
		if !hasPrefix(f.GetName(), c.prefixes) {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make([]string, len(m.GetLabel()))
			for i, l := range m.GetLabel() {
				labels[i] = l.GetName()
			}
			ch <- gathered{desc: prometheus.NewDesc(f.GetName(), f.GetHelp(), labels, nil), m: m}
		}
	}
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// gathered is one already-gathered sample as a prometheus.Metric.
type gathered struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (g gathered) Desc() *prometheus.Desc { return g.desc }

func (g gathered) Write(out *dto.Metric) error {
	out.Label = g.m.Label
	out.Counter, out.Gauge, out.Histogram, out.Summary, out.Untyped = g.m.Counter, g.m.Gauge, g.m.Histogram, g.m.Summary, g.m.Untyped
	out.TimestampMs = g.m.TimestampMs
	return nil
}
