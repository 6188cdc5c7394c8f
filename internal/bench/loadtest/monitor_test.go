package loadtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestMonitorScrapesOverHTTP runs the monitor against an HTTP /metrics
// whose counters grow, then restart (start time changes, counters drop).
func TestMonitorScrapesOverHTTP(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			fmt.Fprint(w, "ok")
		case "/metrics":
			i := n.Add(1)
			start, posts := 1.0, 10*i
			if i > 3 { // the server restarted after the third scrape
				start, posts = 2.0, 10*(i-3)
			}
			fmt.Fprintf(w, "# TYPE apiserver_request_total counter\n"+
				"apiserver_request_total{verb=\"POST\",resource=\"pods\",scope=\"resource\",code=\"201\"} %d\n"+
				"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %d\n"+
				"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 1048576\n"+
				"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %v\n", posts, posts/10, start)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	mc, err := NewMetricsClient(&rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !mc.Ready(t.Context()) {
		t.Fatal("not ready")
	}
	m := StartMonitor(t.Context(), MonitorConfig{Metrics: mc, Interval: 10 * time.Millisecond, Start: time.Now()})
	for n.Load() < 6 {
		time.Sleep(5 * time.Millisecond)
	}
	tot := m.Stop(t.Context())
	scrapes := n.Load()
	// Scrapes 1..3 count 10, 20, 30; after the restart 10, 20, ... again:
	// the increase is 10 per scrape after the first.
	want := float64(10 * (scrapes - 1))
	if got := tot.Sum(nil); got != want {
		t.Errorf("requests %v after %d scrapes, want %v", got, scrapes, want)
	}
	if tot.CPUSeconds != want/10 {
		t.Errorf("cpu %v, want %v", tot.CPUSeconds, want/10)
	}
	var rss Series
	for _, s := range m.Series() {
		if s.Name == "server rss" {
			rss = s
		}
	}
	if len(rss.Points) != int(scrapes) || rss.Points[0].V != 1 {
		t.Errorf("rss series %+v for %d scrapes", rss, scrapes)
	}
}

// TestMonitorConcurrentMarks checks that marks taken while the sampler
// runs never count a request twice: with every scrape showing 10 more
// requests, the total is exactly 10 per scrape after the first.
func TestMonitorConcurrentMarks(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if i%3 == 0 {
			time.Sleep(3 * time.Millisecond) // some scrapes are slow
		}
		fmt.Fprintf(w, "# TYPE apiserver_request_total counter\n"+
			"apiserver_request_total{verb=\"PUT\",resource=\"leases\",scope=\"resource\",code=\"200\"} %d\n"+
			"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %d\n"+
			"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1\n", 10*i, i)
	}))
	defer srv.Close()
	mc, err := NewMetricsClient(&rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	m := StartMonitor(t.Context(), MonitorConfig{Metrics: mc, Interval: 2 * time.Millisecond, Start: time.Now()})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := m.Mark(t.Context()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	tot := m.Stop(t.Context())
	if want := float64(10 * (n.Load() - 1)); tot.Sum(nil) != want {
		t.Errorf("requests %v after %d scrapes, want %v", tot.Sum(nil), n.Load(), want)
	}
}
