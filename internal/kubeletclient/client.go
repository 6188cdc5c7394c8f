package kubeletclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultAddressTypes is Myriad's --kubelet-preferred-address-types order:
// kubeadm's (InternalIP, ExternalIP, Hostname), then the DNS names.
// Upstream's own default puts Hostname first, which fails wherever node
// names do not resolve from the API server — hollow nodes, and most
// clusters not on a cloud's DNS; kubeadm overrides it for that reason.
func DefaultAddressTypes() []corev1.NodeAddressType {
	return []corev1.NodeAddressType{
		corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS,
	}
}

// Config configures a Client. Zero values take the stated defaults.
type Config struct {
	// CAFile holds the CA bundle kubelet serving certificates are verified
	// against (--kubelet-certificate-authority). Empty: the kubelet's
	// certificate is not verified, as upstream does without the flag.
	CAFile string
	// CertFile and KeyFile are the API server's client certificate
	// (--kubelet-client-certificate, --kubelet-client-key), re-read when
	// they change on disk. Empty: none is presented, and a kubelet with
	// webhook authentication answers 401.
	CertFile, KeyFile string
	// PreferredAddressTypes orders the Node address types tried (default
	// DefaultAddressTypes).
	PreferredAddressTypes []corev1.NodeAddressType
	// Timeout bounds the dial and TLS handshake of every kubelet
	// connection, and the wait for response headers where a caller asks
	// for it (HeaderTimeout). Default 5 s. Streams themselves are not
	// time-limited.
	Timeout time.Duration
	// DefaultPort is dialled for a Node that reports no kubelet port
	// (default 10250, upstream's --kubelet-port).
	DefaultPort int32
}

// Client hands out connection details for nodes. It is immutable and safe
// for concurrent use; its transports pool connections per kubelet.
type Client struct {
	types   []corev1.NodeAddressType
	timeout time.Duration
	port    int32
	// tls is the verifying client configuration; secure and insecure are
	// the pooled transports built on it and on its InsecureSkipVerify
	// copy.
	tls              *tls.Config
	secure, insecure *http.Transport
}

// New validates cfg, fills its defaults and loads its certificates.
func New(cfg Config) (*Client, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("kubeletclient: timeout %v is negative", cfg.Timeout)
	}
	if cfg.DefaultPort == 0 {
		cfg.DefaultPort = 10250
	}
	if len(cfg.PreferredAddressTypes) == 0 {
		cfg.PreferredAddressTypes = DefaultAddressTypes()
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kubeletclient: certificate authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("kubeletclient: certificate authority %s holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	} else {
		tlsCfg.InsecureSkipVerify = true
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("kubeletclient: the client certificate and key must be given together")
	}
	if cfg.CertFile != "" {
		r, err := newCertReloader(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, err
		}
		tlsCfg.GetClientCertificate = r.GetClientCertificate
	}
	insecureCfg := tlsCfg.Clone()
	insecureCfg.InsecureSkipVerify = true
	insecureCfg.RootCAs = nil
	c := &Client{types: cfg.PreferredAddressTypes, timeout: cfg.Timeout, port: cfg.DefaultPort, tls: tlsCfg}
	c.secure = c.transport(tlsCfg)
	c.insecure = c.transport(insecureCfg)
	return c, nil
}

// transport is an HTTP/1.1 transport: upgrade requests (exec, attach,
// port-forward) must not negotiate HTTP/2, and one pool serves both.
func (c *Client) transport(cfg *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               nil, // kubelets are dialled directly, never through HTTPS_PROXY
		DialContext:         d.DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: c.timeout,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
}

// Timeout is the configured --kubelet-timeout.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Connection is where a node's kubelet listens and how to reach it.
type Connection struct {
	// Scheme is always "https"; Host is the chosen address, Port the
	// kubelet's port, both as they go into a URL's host.
	Scheme, Host, Port string
	// Transport verifies the kubelet's certificate;
	// InsecureTransport does not (pods/log's
	// insecureSkipTLSVerifyBackend). Both present the client certificate.
	Transport, InsecureTransport http.RoundTripper
}

// HostPort is Host and Port joined for a URL.
func (c *Connection) HostPort() string { return net.JoinHostPort(c.Host, c.Port) }

// NoAddressError is the error for a Node that has none of the preferred
// address types, worded as upstream's.
type NoAddressError struct{ Addresses []corev1.NodeAddress }

func (e *NoAddressError) Error() string {
	return fmt.Sprintf("no preferred addresses found; known addresses: %v", e.Addresses)
}

// Connect returns how to reach node's kubelet: its first address of the
// preferred types, and its reported kubelet port (DefaultPort if none).
func (c *Client) Connect(node *corev1.Node) (*Connection, error) {
	host, err := c.address(node)
	if err != nil {
		return nil, err
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		port = c.port
	}
	return &Connection{Scheme: "https", Host: host, Port: strconv.Itoa(int(port)), Transport: c.secure, InsecureTransport: c.insecure}, nil
}

func (c *Client) address(node *corev1.Node) (string, error) {
	for _, t := range c.types {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address, nil
			}
		}
	}
	return "", &NoAddressError{Addresses: node.Status.Addresses}
}

// ParseAddressTypes parses a comma-separated --kubelet-preferred-address-types.
func ParseAddressTypes(s string) ([]corev1.NodeAddressType, error) {
	var out []corev1.NodeAddressType
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		t := corev1.NodeAddressType(p)
		switch t {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP:
			out = append(out, t)
		default:
			return nil, fmt.Errorf("kubeletclient: unknown node address type %q (want Hostname, InternalDNS, InternalIP, ExternalDNS or ExternalIP)", p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("kubeletclient: no node address types given")
	}
	return out, nil
}

// Upgrade is the transport of one upgrade request (exec, attach,
// port-forward) and the context to send it with. The upgrade paths dial
// by hand, outside http.Transport's own timeouts, so Upgrade bounds them
// itself: the context is cancelled if the dial and TLS handshake have not
// completed within the timeout, and a connection dialled through
// Transport's DialContext must also have the kubelet's answer (its
// response headers) within the timeout — until Established is called,
// which the caller does when the answer has come (it hijacks the client
// connection to start the stream). After that nothing is time-limited:
// streams last as long as their clients want.
type Upgrade struct {
	Transport *http.Transport
	Context   context.Context

	timer  *time.Timer
	cancel context.CancelCauseFunc

	mu struct {
		sync.Mutex
		established bool
		conns       []net.Conn
	}
}

// UpgradeTransport prepares one upgrade request made under ctx. Call Stop
// when the request ends.
func (c *Client) UpgradeTransport(ctx context.Context, insecure bool) *Upgrade {
	base := c.secure
	if insecure {
		base = c.insecure
	}
	u := &Upgrade{}
	u.Context, u.cancel = context.WithCancelCause(ctx)
	timeout := c.timeout
	u.timer = time.AfterFunc(timeout, func() {
		u.cancel(fmt.Errorf("kubelet did not complete the TLS handshake within %v", timeout))
	})
	cfg := base.TLSClientConfig.Clone()
	// VerifyConnection runs at the end of every handshake, after the
	// certificate checks: the kubelet has answered.
	cfg.VerifyConnection = func(tls.ConnectionState) error {
		u.timer.Stop()
		return nil
	}
	dial := base.DialContext
	u.Transport = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			u.mu.Lock()
			defer u.mu.Unlock()
			if !u.mu.established {
				_ = conn.SetDeadline(time.Now().Add(timeout))
				u.mu.conns = append(u.mu.conns, conn)
			}
			return conn, nil
		},
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: timeout,
	}
	return u
}

// Established lifts the deadline on the connections dialled so far: the
// kubelet has answered and the stream begins.
func (u *Upgrade) Established() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.mu.established = true
	for _, c := range u.mu.conns {
		_ = c.SetDeadline(time.Time{})
	}
	u.mu.conns = nil
}

// Stop releases the timer and the context.
func (u *Upgrade) Stop() {
	u.timer.Stop()
	u.cancel(nil)
	u.Transport.CloseIdleConnections()
}

// HeaderTimeout wraps rt so that a request fails if its response headers
// have not arrived within d (for requests a kubelet answers at once; a
// following log stream sends its headers only with its first line).
func HeaderTimeout(rt http.RoundTripper, d time.Duration) http.RoundTripper {
	return &headerTimeout{rt: rt, d: d}
}

type headerTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

// ErrHeaderTimeout is returned when a kubelet's response headers did not
// arrive in time.
var ErrHeaderTimeout = errors.New("timeout awaiting response headers from the kubelet")

func (h *headerTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(h.d, func() { cancel(ErrHeaderTimeout) })
	resp, err := h.rt.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		// The timer fired: whatever RoundTrip returned, it was cut short.
		if err == nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, fmt.Errorf("%w (%v)", ErrHeaderTimeout, h.d)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

// WrappedRoundTripper lets upstream's helpers (utilnet.TLSClientConfig,
// DialerFor) see through the wrapper.
func (h *headerTimeout) WrappedRoundTripper() http.RoundTripper { return h.rt }

type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
