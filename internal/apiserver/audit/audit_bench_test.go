package audit

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditlog "k8s.io/apiserver/plugin/pkg/audit/log"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
)

const metadataPolicyText = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"

func benchAuditor(b *testing.B, policy string) *Auditor {
	b.Helper()
	a, err := New(Config{PolicyFile: writeFile(b, policy), LogPath: filepath.Join(b.TempDir(), "audit.log")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default"}}`))
})

// BenchmarkAuditFilter is the per-request cost of auditing at Metadata
// level (two events: RequestReceived and ResponseComplete, queued for the
// batch writer) against the Audit-Id alone, around a handler that does
// nothing, with authentication and authorization as in the server.
func BenchmarkAuditFilter(b *testing.B) {
	for _, tc := range []struct {
		name    string
		auditor func(*testing.B) *Auditor
	}{
		{"off", func(*testing.B) *Auditor { return nil }},
		{"metadata", func(b *testing.B) *Auditor { return benchAuditor(b, metadataPolicyText) }},
		// The request's own share: events deep-copied as the buffered
		// backend does, then dropped instead of queued for the writer.
		{"metadata-request-path", func(b *testing.B) *Auditor {
			a := benchAuditor(b, metadataPolicyText)
			a.backend = sinkFunc(func(evs ...*auditinternal.Event) bool {
				for _, ev := range evs {
					_ = ev.DeepCopy()
				}
				return true
			})
			return a
		}},
		{"none", func(b *testing.B) *Auditor {
			return benchAuditor(b, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n")
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := filters.Chain(chain(okHandler, tc.auditor(b), authz.AlwaysAllow()))
			req := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/x", nil)
			b.ReportAllocs()
			for b.Loop() {
				r := req.Clone(context.Background())
				r.Header.Set("Authorization", "Bearer "+adminToken)
				h.ServeHTTP(httptest.NewRecorder(), r)
			}
		})
	}
}

// BenchmarkGetThroughput is the audit log's effect on a real GET of a
// ConfigMap served by the API server, in parallel: requests/s with
// auditing off and at Metadata level.
func BenchmarkGetThroughput(b *testing.B) {
	for _, level := range []string{"off", "Metadata"} {
		b.Run(level, func(b *testing.B) {
			var a *Auditor
			if level != "off" {
				a = benchAuditor(b, metadataPolicyText)
			}
			env := newServerEnv(b, nil)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
			if _, err := env.client(b, env.admin).CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			h := chain(env.api, a, authz.AlwaysAllow())
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/x", nil)
					r.Header.Set("Authorization", "Bearer "+adminToken)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != 200 || !strings.Contains(w.Body.String(), `"name":"x"`) {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkLogWriter is the batch writer's capacity: encoding Metadata
// events as JSON lines into the log file, in batches as the buffered
// backend hands them over. At 5,000 requests/s the writer must keep up
// with 10,000 events/s or the queue fills and events are dropped.
func BenchmarkLogWriter(b *testing.B) {
	ev := sampleEvent(b)
	fb := &flushingBackend{w: bufio.NewWriterSize(io.Discard, 64<<10)}
	fb.Backend = auditlog.NewBackend(fb.w, auditlog.FormatJson, auditv1.SchemeGroupVersion)
	batch := make([]*auditinternal.Event, 100)
	for i := range batch {
		batch[i] = ev
	}
	b.ReportAllocs()
	for b.Loop() {
		fb.ProcessEvents(batch...)
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
}

// sampleEvent is the ResponseComplete event of a Metadata-level GET.
func sampleEvent(b *testing.B) *auditinternal.Event {
	b.Helper()
	var captured *auditinternal.Event
	sink := sinkFunc(func(evs ...*auditinternal.Event) bool {
		captured = evs[len(evs)-1].DeepCopy()
		return true
	})
	a := benchAuditor(b, metadataPolicyText)
	a.backend = sink
	h := chain(okHandler, a, authz.AlwaysAllow())
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/x", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if captured == nil {
		b.Fatal("no event")
	}
	return captured
}

type sinkFunc func(...*auditinternal.Event) bool

func (f sinkFunc) ProcessEvents(evs ...*auditinternal.Event) bool { return f(evs...) }
func (f sinkFunc) Run(<-chan struct{}) error                      { return nil }
func (f sinkFunc) Shutdown()                                      {}
func (f sinkFunc) String() string                                 { return "sink" }
