package loadtest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
)

// Key names one kind of call, with upstream's apiserver_request_total
// labels: Verb in upper case (GET, LIST, POST, PUT, PATCH, DELETE), the
// plural Resource, and Scope (resource, namespace or cluster).
type Key struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Scope    string `json:"scope"`
}

func (k Key) String() string { return k.Verb + " " + k.Resource + " " + k.Scope }

// Upstream's API call latency SLOs (sig-scalability's
// api_call_latency.md): p99 per verb/resource/scope over the run.
const (
	SLOMutating  = time.Second      // POST, PUT, PATCH, DELETE
	SLOObject    = time.Second      // GET of one object
	SLONamespace = 5 * time.Second  // LIST in one namespace
	SLOCluster   = 30 * time.Second // LIST across the cluster
)

// SLOFor is the p99 bound upstream sets for calls of k's verb and scope,
// or 0 if it sets none (WATCH, for example).
func SLOFor(k Key) time.Duration {
	switch k.Verb {
	case "POST", "PUT", "PATCH", "DELETE":
		return SLOMutating
	case "GET":
		return SLOObject
	case "LIST":
		switch k.Scope {
		case "namespace":
			return SLONamespace
		case "cluster":
			return SLOCluster
		}
		return SLOObject
	}
	return 0
}

// LatencyStat summarizes the calls of one Key. Latencies are of the calls
// that succeeded; failed calls count in Errors (by HTTP code in Codes).
type LatencyStat struct {
	Key
	// Phase names the part of the run the calls were made in, for
	// scenarios with phases (e.g. baseline and greedy); "" otherwise.
	Phase  string         `json:"phase,omitempty"`
	Count  int            `json:"count"`
	Errors int            `json:"errors"`
	Codes  map[string]int `json:"errorCodes,omitempty"`
	P50    Duration       `json:"p50"`
	P90    Duration       `json:"p90"`
	P99    Duration       `json:"p99"`
	Max    Duration       `json:"max"`
	// SLO is upstream's p99 bound for the key (0: none); Pass says whether
	// P99 is within it and no call failed with a server error.
	SLO  Duration `json:"slo,omitempty"`
	Pass *bool    `json:"pass,omitempty"`
}

// Duration is a time.Duration that reads as seconds in results.json.
type Duration time.Duration

// MarshalJSON writes seconds as a number.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: %w", b, err)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

type sample struct {
	at time.Duration // since the recorder's start, when the call ended
	d  time.Duration
}

// Recorder collects call latencies by Key. Safe for concurrent use.
type Recorder struct {
	start time.Time
	mu    struct {
		sync.Mutex
		samples map[Key][]sample
		errors  map[Key]map[string]int
	}
}

// NewRecorder returns a recorder whose time series start at start.
func NewRecorder(start time.Time) *Recorder {
	r := &Recorder{start: start}
	r.mu.samples = map[Key][]sample{}
	r.mu.errors = map[Key]map[string]int{}
	return r
}

// Observe records one call of kind k that took d and failed with err (nil
// for success).
func (r *Recorder) Observe(k Key, d time.Duration, err error) {
	at := time.Since(r.start)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		m := r.mu.errors[k]
		if m == nil {
			m = map[string]int{}
			r.mu.errors[k] = m
		}
		m[ErrorCode(err)]++
		if _, ok := r.mu.samples[k]; !ok {
			r.mu.samples[k] = nil
		}
		return
	}
	r.mu.samples[k] = append(r.mu.samples[k], sample{at: at, d: d})
}

// ObserveAt records a latency d that ended at time at, for latencies
// computed after the fact (e.g. a watch event seen before the write's
// answer arrived).
func (r *Recorder) ObserveAt(k Key, at time.Time, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.samples[k] = append(r.mu.samples[k], sample{at: at.Sub(r.start), d: d})
}

// Time runs call, records its latency under k and returns its error.
func (r *Recorder) Time(k Key, call func() error) error {
	t := time.Now()
	err := call()
	r.Observe(k, time.Since(t), err)
	return err
}

// ErrorCode is the HTTP status code of an API error as a string ("429"),
// or "error" for failures that got no HTTP answer.
func ErrorCode(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		return strconv.Itoa(int(st.Status().Code))
	}
	return "error"
}

// Count is the number of successful calls recorded under k.
func (r *Recorder) Count(k Key) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.samples[k])
}

// Stats summarizes every key, sorted by key, with SLO verdicts when slo
// is set.
func (r *Recorder) Stats(slo bool) []LatencyStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []LatencyStat
	for k, ss := range r.mu.samples {
		d := make([]time.Duration, len(ss))
		for i, s := range ss {
			d[i] = s.d
		}
		st := Summarize(d)
		st.Key = k
		for code, n := range r.mu.errors[k] {
			if st.Codes == nil {
				st.Codes = map[string]int{}
			}
			st.Codes[code] = n
			st.Errors += n
		}
		if slo {
			if b := SLOFor(k); b > 0 {
				st.SLO = Duration(b)
				pass := st.P99.D() <= b && serverErrors(st.Codes) == 0
				st.Pass = &pass
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b LatencyStat) int {
		if c := compareStrings(a.Resource, b.Resource); c != 0 {
			return c
		}
		if c := compareStrings(a.Verb, b.Verb); c != 0 {
			return c
		}
		return compareStrings(a.Scope, b.Scope)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// serverErrors counts 5xx answers and transport failures: the calls the
// server failed (a 409 or 404 is the client's doing).
func serverErrors(codes map[string]int) int {
	n := 0
	for c, v := range codes {
		code, err := strconv.Atoi(c)
		if err != nil || code >= http.StatusInternalServerError {
			n += v
		}
	}
	return n
}

// Summarize computes count and nearest-rank percentiles of d (sorted in
// place).
func Summarize(d []time.Duration) LatencyStat {
	st := LatencyStat{Count: len(d)}
	if len(d) == 0 {
		return st
	}
	slices.Sort(d)
	st.P50 = Duration(benchutil.Quantile(d, 0.50))
	st.P90 = Duration(benchutil.Quantile(d, 0.90))
	st.P99 = Duration(benchutil.Quantile(d, 0.99))
	st.Max = Duration(d[len(d)-1])
	return st
}

// PercentileSeries returns p50 and p99 (in milliseconds) of all keys'
// samples in consecutive windows of width w, each point at its window's
// end; windows without samples are skipped.
func (r *Recorder) PercentileSeries(w time.Duration, name string) []Series {
	r.mu.Lock()
	var all []sample
	for _, ss := range r.mu.samples {
		all = append(all, ss...)
	}
	r.mu.Unlock()
	return windowPercentiles(all, w, name)
}

func windowPercentiles(all []sample, w time.Duration, name string) []Series {
	if w <= 0 || len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b sample) int { return int(a.at - b.at) })
	p50 := Series{Name: name + " p50", Unit: "ms"}
	p99 := Series{Name: name + " p99", Unit: "ms"}
	for i := 0; i < len(all); {
		end := (all[i].at/w + 1) * w
		j := i
		var d []time.Duration
		for j < len(all) && all[j].at < end {
			d = append(d, all[j].d)
			j++
		}
		st := Summarize(d)
		t := end.Seconds()
		p50.Points = append(p50.Points, Point{T: t, V: ms(st.P50.D())})
		p99.Points = append(p99.Points, Point{T: t, V: ms(st.P99.D())})
		i = j
	}
	return []Series{p50, p99}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
