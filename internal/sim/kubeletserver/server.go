package kubeletserver

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/utils/clock"
)

// Pods finds the pods the hollow nodes run. It must be safe for concurrent
// use; the pods it returns are shared and must not be modified.
type Pods interface {
	// Pod returns the newest version of pod namespace/name that one of the
	// hollow nodes runs, and that node's name; ok is false when none does.
	Pod(namespace, name string) (pod *corev1.Pod, node string, ok bool)
	// NodeDown reports whether node's kubelet is down (a hollow node made
	// to fail): its requests get 503, where a dial to a dead kubelet fails.
	NodeDown(node string) bool
}

// Config configures a Server. Zero values take the defaults in the
// comments.
type Config struct {
	// Pods looks pods up. Required.
	Pods Pods
	// LogInterval is how often a container writes a log line; default 1s.
	LogInterval time.Duration
	// MaxLogLines is how many of its newest lines a container's log keeps;
	// default 1000.
	MaxLogLines int
	// StreamIdleTimeout closes an exec, attach or port-forward connection
	// with no traffic for that long; default 4h, the kubelet's.
	StreamIdleTimeout time.Duration
	// StreamCreationTimeout bounds how long a client takes to open its
	// streams after the upgrade; default 30s, the kubelet's.
	StreamCreationTimeout time.Duration
	// ClientCAs verifies client certificates. Required unless Anonymous.
	ClientCAs *x509.CertPool
	// Anonymous lets requests without a client certificate in.
	Anonymous bool
	// Metrics, if set, receives kubelet_http_requests_total and
	// kubelet_http_inflight_requests.
	Metrics prometheus.Registerer
	// Clock times log lines; default the real clock.
	Clock clock.Clock
}

// Server serves the kubelet API of a process's hollow nodes. Serve its
// Handler over TLS with TLSConfig.
type Server struct {
	cfg     Config
	handler http.Handler
	metrics *metrics
}

// New validates cfg, fills its defaults and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Pods == nil {
		return nil, errors.New("kubeletserver: Pods is required")
	}
	if cfg.ClientCAs == nil && !cfg.Anonymous {
		return nil, errors.New("kubeletserver: ClientCAs is required unless Anonymous")
	}
	if cfg.LogInterval < 0 || cfg.MaxLogLines < 0 || cfg.StreamIdleTimeout < 0 || cfg.StreamCreationTimeout < 0 {
		return nil, errors.New("kubeletserver: LogInterval, MaxLogLines and stream timeouts must not be negative")
	}
	if cfg.LogInterval == 0 {
		cfg.LogInterval = time.Second
	}
	if cfg.MaxLogLines == 0 {
		cfg.MaxLogLines = 1000
	}
	if cfg.StreamIdleTimeout == 0 {
		cfg.StreamIdleTimeout = 4 * time.Hour
	}
	if cfg.StreamCreationTimeout == 0 {
		cfg.StreamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &Server{cfg: cfg}
	if cfg.Metrics != nil {
		m, err := newMetrics(cfg.Metrics)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.serveLogs)
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{container}", s.serveExec)
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{uid}/{container}", s.serveExec)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{container}", s.serveAttach)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{uid}/{container}", s.serveAttach)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}", s.servePortForward)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}/{uid}", s.servePortForward)
	}
	mux.HandleFunc("POST /run/{ns}/{pod}/{container}", s.serveRun)
	mux.HandleFunc("POST /run/{ns}/{pod}/{uid}/{container}", s.serveRun)
	s.handler = s.authenticate(s.metrics.instrument(mux))
	return s, nil
}

// Handler is the server's HTTP handler: authentication, metrics, routes.
func (s *Server) Handler() http.Handler { return s.handler }

// authenticate admits a request with a verified client certificate that is
// not a node's, or any request when Anonymous. TLS has verified the chain
// already (tls.Config.ClientAuth); this decides who may use it.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || s.cfg.Anonymous {
			next.ServeHTTP(w, r)
			return
		}
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if slices.Contains(r.TLS.VerifiedChains[0][0].Subject.Organization, "system:nodes") {
			user := r.TLS.VerifiedChains[0][0].Subject.CommonName
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)", user, strings.ToLower(r.Method)), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// lookup finds the pod named by the request's path, answering 404 as the
// kubelet does (with its message) when no hollow node runs it or uid is
// given and differs.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*corev1.Pod, string, bool) {
	pod, node, ok := s.cfg.Pods.Pod(r.PathValue("ns"), r.PathValue("pod"))
	if !ok {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return nil, "", false
	}
	if uid := r.PathValue("uid"); uid != "" && string(pod.UID) != uid {
		http.Error(w, "pod not found", http.StatusNotFound)
		return nil, "", false
	}
	if s.cfg.Pods.NodeDown(node) {
		nodeDown(w, node)
		return nil, "", false
	}
	return pod, node, true
}

// nodeDown answers for the kubelet of a failed hollow node.
func nodeDown(w http.ResponseWriter, node string) {
	http.Error(w, fmt.Sprintf("the kubelet of hollow node %s is down", node), http.StatusServiceUnavailable)
}

// hasContainer reports whether pod has a container (regular, init or
// ephemeral) called name.
func hasContainer(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}

// containerNotFound answers 404 for a container the pod lacks, in the
// kubelet's words.
func containerNotFound(w http.ResponseWriter, container, pod string) {
	http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, pod), http.StatusNotFound)
}

func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.streamTarget(w, r); ok {
		remotecommand.ServeExec(w, r, t.rt, t.rt.pod.Name, string(t.rt.pod.UID), t.container, r.URL.Query()["command"], t.opts,
			s.cfg.StreamIdleTimeout, s.cfg.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	}
}

func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	if t, ok := s.streamTarget(w, r); ok {
		remotecommand.ServeAttach(w, r, t.rt, t.rt.pod.Name, string(t.rt.pod.UID), t.container, t.opts,
			s.cfg.StreamIdleTimeout, s.cfg.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	}
}

// streamTarget is what an exec or attach request names: its stream
// options and the pod's container, or an error already answered.
type streamTarget struct {
	opts      *remotecommand.Options
	rt        *hollowRuntime
	container string
}

func (s *Server) streamTarget(w http.ResponseWriter, r *http.Request) (streamTarget, bool) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return streamTarget{}, false
	}
	pod, node, ok := s.lookup(w, r)
	if !ok {
		return streamTarget{}, false
	}
	c := r.PathValue("container")
	if !hasContainer(pod, c) {
		containerNotFound(w, c, pod.Name)
		return streamTarget{}, false
	}
	return streamTarget{opts: opts, rt: &hollowRuntime{s: s, pod: pod, node: node}, container: c}, true
}

func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, node, ok := s.lookup(w, r)
	if !ok {
		return
	}
	rt := &hollowRuntime{s: s, pod: pod, node: node}
	portforward.ServePortForward(w, r, rt, pod.Name, string(pod.UID), opts,
		s.cfg.StreamIdleTimeout, s.cfg.StreamCreationTimeout, portforward.SupportedProtocols)
}

// serveRun is the kubelet's legacy /run: the command (cmd, split on
// spaces) runs to completion and its output is the response.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	pod, node, ok := s.lookup(w, r)
	if !ok {
		return
	}
	c := r.PathValue("container")
	if !hasContainer(pod, c) {
		containerNotFound(w, c, pod.Name)
		return
	}
	rt := &hollowRuntime{s: s, pod: pod, node: node}
	out, code := rt.run(strings.Split(r.URL.Query().Get("cmd"), " "), nil)
	if code != 0 {
		http.Error(w, "command terminated with non-zero exit code: exit status "+strconv.Itoa(code), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
