package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// RequestKey is one apiserver_request_total series, reduced to the labels
// the harness reads.
type RequestKey struct {
	Verb, Resource, Subresource, Scope, Code string
}

// Scrape is what the harness reads from one GET /metrics.
type Scrape struct {
	At time.Time
	// Requests is apiserver_request_total by series.
	Requests map[RequestKey]float64
	// CPUSeconds and RSSBytes are process_cpu_seconds_total and
	// process_resident_memory_bytes; HasProcess says whether the server
	// exports them.
	CPUSeconds, RSSBytes float64
	HasProcess           bool
	// HeapInuseBytes is go_memstats_heap_inuse_bytes (0 when not
	// exported): finer than RSS for what one connection or stream costs.
	HeapInuseBytes float64
	// StartTime is process_start_time_seconds: it changes when the server
	// restarts, which resets every counter.
	StartTime float64
	// Inflight is apiserver_current_inflight_requests summed over kinds.
	Inflight float64
	// Watches is apiserver_longrunning_requests{verb="WATCH"} summed: the
	// watches open now (apiserver_request_total counts a watch only when
	// it ends).
	Watches float64
}

// ParseMetrics reads the Prometheus text exposition format.
func ParseMetrics(r io.Reader) (Scrape, error) {
	text, err := keepFamilies(r, scrapedFamilies)
	if err != nil {
		return Scrape{}, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return Scrape{}, fmt.Errorf("parsing metrics: %w", err)
	}
	s := Scrape{Requests: map[RequestKey]float64{}}
	if f := fams["apiserver_request_total"]; f != nil {
		for _, m := range f.GetMetric() {
			var k RequestKey
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "verb":
					k.Verb = l.GetValue()
				case "resource":
					k.Resource = l.GetValue()
				case "subresource":
					k.Subresource = l.GetValue()
				case "scope":
					k.Scope = l.GetValue()
				case "code":
					k.Code = l.GetValue()
				}
			}
			s.Requests[k] += m.GetCounter().GetValue()
		}
	}
	if f := fams["process_cpu_seconds_total"]; f != nil && len(f.GetMetric()) > 0 {
		s.CPUSeconds = f.GetMetric()[0].GetCounter().GetValue()
		s.HasProcess = true
	}
	if f := fams["process_resident_memory_bytes"]; f != nil && len(f.GetMetric()) > 0 {
		s.RSSBytes = f.GetMetric()[0].GetGauge().GetValue()
	}
	if f := fams["go_memstats_heap_inuse_bytes"]; f != nil && len(f.GetMetric()) > 0 {
		s.HeapInuseBytes = f.GetMetric()[0].GetGauge().GetValue()
	}
	if f := fams["process_start_time_seconds"]; f != nil && len(f.GetMetric()) > 0 {
		s.StartTime = f.GetMetric()[0].GetGauge().GetValue()
	}
	if f := fams["apiserver_longrunning_requests"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" && l.GetValue() == "WATCH" {
					s.Watches += m.GetGauge().GetValue()
				}
			}
		}
	}
	if f := fams["apiserver_current_inflight_requests"]; f != nil {
		for _, m := range f.GetMetric() {
			s.Inflight += m.GetGauge().GetValue()
		}
	}
	return s, nil
}

// Sum adds the requests whose key match accepts.
func (s Scrape) Sum(match func(RequestKey) bool) float64 {
	var n float64
	for k, v := range s.Requests {
		if match == nil || match(k) {
			n += v
		}
	}
	return n
}

// RequestsDelta is after's count minus before's for the keys match
// accepts. A server restart resets counters; series missing from before
// count from zero.
func RequestsDelta(before, after Scrape, match func(RequestKey) bool) float64 {
	return after.Sum(match) - before.Sum(match)
}

// IsMutating reports whether a verb writes.
func IsMutating(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION":
		return true
	}
	return false
}

// MetricsClient fetches /metrics from the server through client-go's
// transport (so it authenticates like any other call).
type MetricsClient struct {
	rc rest.Interface
}

// NewMetricsClient returns a client for cfg's server.
func NewMetricsClient(cfg *rest.Config) (*MetricsClient, error) {
	c := rest.CopyConfig(cfg)
	c.AcceptContentTypes = "text/plain"
	c.ContentType = ""
	c.GroupVersion = nil
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("metrics client: %w", err)
	}
	return &MetricsClient{rc: rc}, nil
}

// Scrape fetches and parses /metrics once.
func (m *MetricsClient) Scrape(ctx context.Context) (Scrape, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := m.rc.Get().AbsPath("/metrics").Stream(ctx)
	if err != nil {
		return Scrape{}, fmt.Errorf("GET /metrics: %w", err)
	}
	defer body.Close()
	s, err := ParseMetrics(body)
	s.At = time.Now()
	return s, err
}

// Ready reports whether GET /readyz answers ok.
func (m *MetricsClient) Ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := m.rc.Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil && strings.TrimSpace(string(b)) == "ok"
}
