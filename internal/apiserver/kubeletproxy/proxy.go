package kubeletproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"

	"github.com/myriad-k8s/myriad/internal/kubeletclient"
)

// Objects reads the objects the locations are computed from. Errors are
// the API's (NotFound as a StatusError).
type Objects interface {
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	Node(ctx context.Context, name string) (*corev1.Node, error)
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
	Endpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error)
}

// Config configures a Proxy.
type Config struct {
	// Kubelets dials kubelets. Required.
	Kubelets *kubeletclient.Client
	// Objects reads pods, nodes, services and endpoints. Required.
	Objects Objects
	// WriteError answers err as a Kubernetes Status. Required.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// AllowLoopback lets pods/proxy, services/proxy and nodes/proxy reach
	// loopback and link-local addresses, which upstream refuses ("address
	// not allowed") so that a Node or Pod status cannot point the API
	// server at its own host. Hollow-node clusters, whose nodes and pods
	// all live on 127.0.0.1, need it.
	AllowLoopback bool
	// Metrics receives kubelet_proxy_* metrics; nil: none are exported.
	Metrics prometheus.Registerer
}

// Proxy serves the connect subresources. Safe for concurrent use.
type Proxy struct {
	cfg Config
	// proxyTransport dials pods and service endpoints for pods/proxy and
	// services/proxy: no client certificate, no verification, as
	// upstream's proxy transport.
	proxyTransport *http.Transport
	metrics        *metrics
}

// New checks cfg and builds a Proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Kubelets == nil || cfg.Objects == nil || cfg.WriteError == nil {
		return nil, errors.New("kubeletproxy: Kubelets, Objects and WriteError are required")
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: cfg.Kubelets.Timeout()}
	return &Proxy{
		cfg: cfg,
		proxyTransport: &http.Transport{
			DialContext:         d.DialContext,
			TLSClientConfig:     insecureTLS(),
			TLSHandshakeTimeout: cfg.Kubelets.Timeout(),
			MaxIdleConnsPerHost: 4,
		},
		metrics: m,
	}, nil
}

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	nodesGR    = schema.GroupResource{Resource: "nodes"}
	servicesGR = schema.GroupResource{Resource: "services"}
)

// proxyMethods are the methods the proxy subresources accept, as upstream.
var proxyMethods = map[string]bool{
	http.MethodGet: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodHead: true, http.MethodOptions: true,
}

// upgradeMethods are exec's, attach's and portforward's.
func upgradeMethod(m string) bool { return m == http.MethodGet || m == http.MethodPost }

func methodNotAllowed(gr schema.GroupResource, r *http.Request) error {
	return apierrors.NewMethodNotSupported(gr, strings.ToLower(r.Method))
}

// responder turns the proxy handlers' setup errors into Statuses: errors
// already of the API pass through; a failure to reach the backend is a
// 503 ServiceUnavailable, not the 500 an unknown error would be.
type responder struct{ p *Proxy }

func (rs responder) Error(w http.ResponseWriter, r *http.Request, err error) {
	// A dial cut short by the kubelet timeout fails with "context
	// canceled"; the cause says what happened.
	if cause := context.Cause(r.Context()); cause != nil && !errors.Is(cause, context.Canceled) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	rs.p.cfg.WriteError(w, r, backendError(err))
}

func backendError(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach the kubelet: %v", err))
}

// nodeConnection reads node name and the connection to its kubelet.
func (p *Proxy) nodeConnection(ctx context.Context, name string) (*kubeletclient.Connection, error) {
	node, err := p.cfg.Objects.Node(ctx, name)
	if err != nil {
		return nil, err
	}
	conn, err := p.cfg.Kubelets.Connect(node)
	if err != nil {
		// A Node without a usable address is the cluster's state, not a
		// server fault: 503 with upstream's message.
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q: %v", name, err))
	}
	return conn, nil
}

// proxyableHost is upstream's isProxyableHostname: every address the host
// resolves to must be global unicast, unless loopback is allowed.
func (p *Proxy) proxyableHost(ctx context.Context, host string) error {
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(ips) == 0 {
		return apierrors.NewBadRequest("no addresses for hostname")
	}
	for _, ip := range ips {
		if !p.allowedIP(ip.IP) {
			return apierrors.NewBadRequest("address not allowed")
		}
	}
	return nil
}

func (p *Proxy) allowedIP(ip net.IP) bool {
	if ip == nil {
		return false
	}
	return ip.IsGlobalUnicast() || (p.cfg.AllowLoopback && ip.IsLoopback())
}

// proxyHandler is upstream's newThrottledUpgradeAwareProxyHandler.
func (p *Proxy) proxyHandler(loc *url.URL, rt http.RoundTripper, wrapTransport, upgradeRequired bool) *proxy.UpgradeAwareHandler {
	h := proxy.NewUpgradeAwareHandler(loc, rt, wrapTransport, upgradeRequired, responder{p: p})
	return h
}

// joinPath appends the client's path below the subresource to loc's, as
// upstream's net.JoinPreservingTrailingSlash.
func joinPath(loc *url.URL, path string) {
	loc.Path = utilnet.JoinPreservingTrailingSlash(loc.Path, path)
}
