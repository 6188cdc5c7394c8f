package kubeletserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errDecode and errInvalid are the kubelet's answers to log options it
// cannot decode (400) and to invalid ones (422), bodies included.
var (
	errDecode  = errors.New(`{"message": "Unable to decode query."}`)
	errInvalid = errors.New(`{"message": "Invalid request."}`)
)

// parseLogOptions decodes the query of a containerLogs request as the
// kubelet does (PodLogOptions, v1 query conversion, the legacy tail
// parameter) and validates the result. Its error is errDecode or
// errInvalid.
func parseLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{}
	boolean := func(key string) bool {
		v, ok := q[key]
		if !ok || len(v) == 0 {
			return false
		}
		return v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	integer := func(key string) (*int64, error) {
		v := q[key]
		if len(v) == 0 || v[0] == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, errDecode
		}
		return &n, nil
	}
	opts.Follow = boolean("follow")
	opts.Previous = boolean("previous")
	opts.Timestamps = boolean("timestamps")
	opts.InsecureSkipTLSVerifyBackend = boolean("insecureSkipTLSVerifyBackend")
	opts.Container = q.Get("container")
	var err error
	if opts.SinceSeconds, err = integer("sinceSeconds"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = integer("limitBytes"); err != nil {
		return nil, err
	}
	// Backwards compatibility for "tail", whose "all" means no limit.
	if tail := q.Get("tail"); tail != "" {
		q = cloneWith(q, "tailLines", tail)
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	if opts.TailLines, err = integer("tailLines"); err != nil {
		return nil, err
	}
	if v := q["sinceTime"]; len(v) > 0 && v[0] != "" {
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(v[0]); err != nil {
			return nil, errDecode
		}
		if !t.IsZero() {
			opts.SinceTime = &t
		}
	}
	if v := q["stream"]; len(v) > 0 {
		st := v[0]
		opts.Stream = &st
	}
	switch {
	case opts.TailLines != nil && *opts.TailLines < 0,
		opts.LimitBytes != nil && *opts.LimitBytes < 1,
		opts.SinceSeconds != nil && opts.SinceTime != nil,
		opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		return nil, errInvalid
	}
	if opts.Stream != nil {
		switch *opts.Stream {
		case corev1.LogStreamAll:
		case corev1.LogStreamStdout, corev1.LogStreamStderr:
			if opts.TailLines != nil {
				return nil, errInvalid // "tailLines and specific stream are mutually exclusive"
			}
		default:
			return nil, errInvalid
		}
	}
	return opts, nil
}

func cloneWith(q url.Values, key, value string) url.Values {
	out := make(url.Values, len(q)+1)
	for k, v := range q {
		out[k] = v
	}
	out[key] = []string{value}
	return out
}

// containerLog is one container's synthetic log: line k is due at
// start+k*interval, until end (zero while the container runs).
type containerLog struct {
	prefix     string // "<node> <namespace>/<pod>/<container> line "
	start, end time.Time
	ns, pod    string
	uid        string
	container  string
}

// errWaiting is a container without a log yet (kubelet: 400).
type errWaiting struct{ msg string }

func (e errWaiting) Error() string { return e.msg }

// containerLog finds container's state in pod and the log it implies.
func (s *Server) containerLog(pod *corev1.Pod, node, container string) (containerLog, error) {
	lg := containerLog{
		prefix: node + " " + pod.Namespace + "/" + pod.Name + "/" + container + " line ",
		ns:     pod.Namespace, pod: pod.Name, uid: string(pod.UID), container: container,
	}
	var st *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				st = &list[i]
			}
		}
	}
	reason := "ContainerCreating"
	switch {
	case st != nil && st.State.Running != nil:
		lg.start = st.State.Running.StartedAt.Time
	case st != nil && st.State.Terminated != nil:
		lg.start, lg.end = st.State.Terminated.StartedAt.Time, st.State.Terminated.FinishedAt.Time
		if lg.end.IsZero() {
			lg.end = lg.start
		}
	case st != nil && st.State.Waiting != nil && st.State.Waiting.Reason != "":
		reason = st.State.Waiting.Reason
		fallthrough
	default:
		return lg, errWaiting{fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)}
	}
	if lg.start.IsZero() {
		if pod.Status.StartTime != nil {
			lg.start = pod.Status.StartTime.Time
		} else {
			lg.start = s.cfg.Clock.Now()
		}
	}
	return lg, nil
}

func (s *Server) serveLogs(w http.ResponseWriter, r *http.Request) {
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		code := http.StatusBadRequest
		if err == errInvalid {
			code = http.StatusUnprocessableEntity
		}
		http.Error(w, err.Error(), code)
		return
	}
	pod, node, ok := s.cfg.Pods.Pod(r.PathValue("ns"), r.PathValue("pod"))
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", r.PathValue("pod")), http.StatusNotFound)
		return
	}
	if s.cfg.Pods.NodeDown(node) {
		nodeDown(w, node)
		return
	}
	c := r.PathValue("container")
	if !hasContainer(pod, c) {
		containerNotFound(w, c, pod.Name)
		return
	}
	if opts.Previous {
		// Hollow containers never restart: there is no previous one.
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", c, pod.Name), http.StatusBadRequest)
		return
	}
	lg, err := s.containerLog(pod, node, c)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if opts.Stream != nil && *opts.Stream == corev1.LogStreamStderr {
		return // every line is on stdout
	}
	s.writeLog(r.Context(), &flushWriter{w: w, f: http.NewResponseController(w)}, lg, opts)
}

// writeLog writes lg as opts select (since*, tailLines, limitBytes,
// timestamps) and, with follow, every further line when it falls due until
// ctx ends, the container stops, the pod is gone or a write fails.
func (s *Server) writeLog(ctx context.Context, w *flushWriter, lg containerLog, opts *corev1.PodLogOptions) {
	iv := s.cfg.LogInterval
	now := s.cfg.Clock.Now()
	last := lg.lastLine(now, iv)
	first := max(0, last-int64(s.cfg.MaxLogLines)+1)
	var since time.Time
	switch {
	case opts.SinceSeconds != nil:
		since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	case opts.SinceTime != nil:
		since = opts.SinceTime.Time
	}
	if since.After(lg.start) {
		first = max(first, int64((since.Sub(lg.start)+iv-1)/iv))
	}
	if opts.TailLines != nil {
		first = max(first, last-*opts.TailLines+1)
	}
	budget := int64(-1)
	if opts.LimitBytes != nil {
		budget = *opts.LimitBytes
	}
	buf := make([]byte, 0, 32<<10)
	for k := first; k <= last; k++ {
		buf = lg.appendLine(buf, k, iv, opts.Timestamps)
		if len(buf) >= 31<<10 {
			if buf, budget = w.limited(buf, budget); budget == 0 || w.err != nil {
				return
			}
		}
	}
	if buf, budget = w.limited(buf, budget); budget == 0 || w.err != nil {
		return
	}
	w.flush()
	if !opts.Follow || !lg.end.IsZero() {
		return
	}
	for k := last + 1; ; k++ {
		due := lg.start.Add(time.Duration(k) * iv)
		if d := due.Sub(s.cfg.Clock.Now()); d > 0 {
			t := s.cfg.Clock.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		if !s.running(lg) {
			return
		}
		buf = lg.appendLine(buf[:0], k, iv, opts.Timestamps)
		if buf, budget = w.limited(buf, budget); budget == 0 || w.err != nil {
			return
		}
		w.flush()
		if w.err != nil {
			return
		}
	}
}

// running reports whether lg's container still runs on a hollow node of
// this process: followed logs end when it stops.
func (s *Server) running(lg containerLog) bool {
	pod, node, ok := s.cfg.Pods.Pod(lg.ns, lg.pod)
	if !ok || string(pod.UID) != lg.uid || pod.DeletionTimestamp != nil || s.cfg.Pods.NodeDown(node) {
		return false
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == lg.container {
			return st.State.Terminated == nil
		}
	}
	return true
}

// lastLine is the index of the newest line written by now (-1 if none).
func (lg containerLog) lastLine(now time.Time, iv time.Duration) int64 {
	if !lg.end.IsZero() && now.After(lg.end) {
		now = lg.end
	}
	if now.Before(lg.start) {
		return -1
	}
	return int64(now.Sub(lg.start) / iv)
}

func (lg containerLog) appendLine(buf []byte, k int64, iv time.Duration, timestamps bool) []byte {
	if timestamps {
		buf = lg.start.Add(time.Duration(k)*iv).UTC().AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, ' ')
	}
	buf = append(buf, lg.prefix...)
	buf = strconv.AppendInt(buf, k, 10)
	return append(buf, '\n')
}

// flushWriter writes to a client and flushes when told; it keeps the first
// write error.
type flushWriter struct {
	w   io.Writer
	f   *http.ResponseController // nil: nothing to flush
	err error
}

// limited writes buf, cut to budget bytes when budget >= 0, and returns buf
// emptied and the budget left (-1: unlimited).
func (fw *flushWriter) limited(buf []byte, budget int64) ([]byte, int64) {
	if len(buf) == 0 || fw.err != nil {
		return buf[:0], budget
	}
	if budget >= 0 && int64(len(buf)) > budget {
		buf = buf[:budget]
	}
	_, fw.err = fw.w.Write(buf)
	if budget >= 0 {
		budget -= int64(len(buf))
		if budget == 0 {
			fw.flush()
		}
	}
	return buf[:0], budget
}

func (fw *flushWriter) flush() {
	if fw.f != nil && fw.err == nil {
		fw.err = fw.f.Flush()
	}
}
