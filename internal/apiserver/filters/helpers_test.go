package filters

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// okHandler answers 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("ok"))
})

// serve runs one request through h and returns the recorded response.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// decodeStatus checks that w holds a JSON metav1.Status with the given code
// and reason, and returns it.
func decodeStatus(t *testing.T, w *httptest.ResponseRecorder, code int, reason metav1.StatusReason) *metav1.Status {
	t.Helper()
	if w.Code != code {
		t.Fatalf("code %d, want %d; body %s", w.Code, code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var s metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if s.Kind != "Status" || s.APIVersion != "v1" || s.Status != metav1.StatusFailure || s.Code != int32(code) || s.Reason != reason {
		t.Fatalf("status %+v, want code %d reason %s", s, code, reason)
	}
	return &s
}

// metricValue returns the value of the counter, gauge or histogram (its
// sample count) name whose labels include want; -1 if there is none.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}
