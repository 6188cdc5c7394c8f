package kubeletproxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// execOptions is PodExecOptions and PodAttachOptions as the query carries
// them (upstream's parameter codec: a bool is true unless "0"/"false").
type execOptions struct {
	container                  string
	stdin, stdout, stderr, tty bool
	command                    []string
}

func parseExecOptions(q url.Values) (*execOptions, error) {
	o := &execOptions{container: q.Get("container"), command: q["command"]}
	for key, out := range map[string]*bool{"stdin": &o.stdin, "stdout": &o.stdout, "stderr": &o.stderr, "tty": &o.tty} {
		if v, ok := q[key]; ok {
			if err := runtime.Convert_Slice_string_To_bool(&v, out, nil); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
	}
	return o, nil
}

// params are the kubelet's query for exec (with command) or attach:
// upstream's streamParams.
func (o *execOptions) params(withCommand bool) url.Values {
	params := url.Values{}
	if o.stdin {
		params.Add(corev1.ExecStdinParam, "1")
	}
	if o.stdout {
		params.Add(corev1.ExecStdoutParam, "1")
	}
	if o.stderr {
		params.Add(corev1.ExecStderrParam, "1")
	}
	if o.tty {
		params.Add(corev1.ExecTTYParam, "1")
	}
	if withCommand {
		for _, c := range o.command {
			params.Add("command", c)
		}
	}
	return params
}

// PodExec serves GET/POST pods/exec.
func (p *Proxy) PodExec(w http.ResponseWriter, r *http.Request, namespace, name string) {
	p.execOrAttach(w, r, namespace, name, "exec")
}

// PodAttach serves GET/POST pods/attach.
func (p *Proxy) PodAttach(w http.ResponseWriter, r *http.Request, namespace, name string) {
	p.execOrAttach(w, r, namespace, name, "attach")
}

func (p *Proxy) execOrAttach(w http.ResponseWriter, r *http.Request, namespace, name, kind string) {
	if !upgradeMethod(r.Method) {
		p.cfg.WriteError(w, r, methodNotAllowed(podsGR, r))
		return
	}
	opts, err := parseExecOptions(r.URL.Query())
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	pod, err := p.cfg.Objects.Pod(r.Context(), namespace, name)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	container, err := validateContainer(opts.container, pod)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	loc, err := p.podStreamLocation(r, pod, fmt.Sprintf("/%s/%s/%s/%s", kind, pod.Namespace, pod.Name, container), opts.params(kind == "exec"))
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	up := p.cfg.Kubelets.UpgradeTransport(r.Context(), false)
	defer up.Stop()
	r = r.WithContext(up.Context)
	rt := up.Transport
	rec := p.record(w, "pods", kind)
	rec.established = up.Established

	var h http.Handler = p.proxyHandler(loc, rt, false, true)
	// kubectl ≥ 1.31 speaks WebSocket (v5.channel.k8s.io); the kubelet
	// speaks SPDY: translate, as upstream's TranslateStreamCloseWebsocketRequests.
	streamTranslator := translator.NewStreamTranslatorHandler(loc, rt, 0, translator.Options{
		Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr, Tty: opts.tty,
	})
	h = translator.NewTranslatingHandler(h, streamTranslator, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
	h.ServeHTTP(rec, r)
}

// PodPortForward serves GET/POST pods/portforward: SPDY passed through,
// or WebSocket tunnelling SPDY (portforward.k8s.io over
// SPDY/3.1+portforward.k8s.io) unwrapped for the kubelet.
func (p *Proxy) PodPortForward(w http.ResponseWriter, r *http.Request, namespace, name string) {
	if !upgradeMethod(r.Method) {
		p.cfg.WriteError(w, r, methodNotAllowed(podsGR, r))
		return
	}
	params := url.Values{}
	if ports := r.URL.Query()["ports"]; len(ports) > 0 {
		out := make([]string, 0, len(ports))
		for _, s := range ports {
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				p.cfg.WriteError(w, r, apierrors.NewBadRequest(err.Error()))
				return
			}
			out = append(out, strconv.FormatInt(n, 10))
		}
		params.Add(corev1.PortHeader, strings.Join(out, ","))
	}
	pod, err := p.cfg.Objects.Pod(r.Context(), namespace, name)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	loc, err := p.podStreamLocation(r, pod, fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name), params)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	up := p.cfg.Kubelets.UpgradeTransport(r.Context(), false)
	defer up.Stop()
	r = r.WithContext(up.Context)
	rt := up.Transport
	rec := p.record(w, "pods", "portforward")
	rec.established = up.Established

	var h http.Handler = p.proxyHandler(loc, rt, false, true)
	h = translator.NewTranslatingHandler(h, translator.NewTunnelingHandler(h), wsstream.IsWebSocketRequestWithTunnelingProtocol)
	h.ServeHTTP(rec, r)
}

// podStreamLocation is the kubelet URL of path on pod's node; a pod not
// yet scheduled is a 400, as upstream's streamLocation.
func (p *Proxy) podStreamLocation(r *http.Request, pod *corev1.Pod, path string, params url.Values) (*url.URL, error) {
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	conn, err := p.nodeConnection(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: conn.Scheme, Host: conn.HostPort(), Path: path, RawQuery: params.Encode()}, nil
}

// upgradeRecorder records, the moment the request is answered, how long
// the backend took: the first WriteHeader (an error, or a proxied
// response) or Hijack (101: the stream begins). Streams are observed
// then, not when they end.
type upgradeRecorder struct {
	http.ResponseWriter
	start    time.Time
	answered bool
	metrics  *metrics
	resource string
	sub      string
	// established, when set, runs before the client connection is
	// hijacked: the kubelet has answered (UpgradeAwareHandler hijacks
	// only after reading the kubelet's response), so its connection's
	// setup deadline is lifted.
	established func()
}

func (p *Proxy) record(w http.ResponseWriter, resource, sub string) *upgradeRecorder {
	return &upgradeRecorder{ResponseWriter: w, start: time.Now(), metrics: p.metrics, resource: resource, sub: sub}
}

func (u *upgradeRecorder) note(code int) {
	if !u.answered {
		u.answered = true
		u.metrics.observe(u.resource, u.sub, code, u.start)
	}
}

func (u *upgradeRecorder) WriteHeader(code int) {
	u.note(code)
	u.ResponseWriter.WriteHeader(code)
}

func (u *upgradeRecorder) Write(b []byte) (int, error) {
	u.note(http.StatusOK)
	return u.ResponseWriter.Write(b)
}

func (u *upgradeRecorder) Flush() { _ = http.NewResponseController(u.ResponseWriter).Flush() }

func (u *upgradeRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if u.established != nil {
		u.established()
	}
	u.note(http.StatusSwitchingProtocols)
	return http.NewResponseController(u.ResponseWriter).Hijack()
}

func (u *upgradeRecorder) Unwrap() http.ResponseWriter { return u.ResponseWriter }
