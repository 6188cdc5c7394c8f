package sim

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/sim/kubeletserver"
)

// KubeletConfig configures the kubelet API the hollow nodes serve
// (package kubeletserver): one HTTPS listener for the whole process, which
// every node reports as its address (status.addresses InternalIP) and port
// (status.daemonEndpoints.kubeletEndpoint), so the API server's logs, exec,
// attach and port-forward reach it. Off unless Enabled: nodes then report
// a synthetic InternalIP in 172.16.0.0/12 and port 10250, which nothing
// answers.
type KubeletConfig struct {
	Enabled bool
	// Address is the IP the listener binds to and the API server dials:
	// every node's InternalIP and the serving certificate's IP SAN. Default
	// 127.0.0.1.
	Address string
	// Port is the listener's port; 0 picks a free one.
	Port int
	// Anonymous admits requests without a client certificate. By default
	// a client certificate from the cluster CA (the kubeconfig's) is
	// required: exec is not open to whoever reaches the port.
	Anonymous bool
	// CertificateTimeout bounds the wait for the kubelet-serving signer to
	// issue the serving certificate; default 1m.
	CertificateTimeout time.Duration
	// LogInterval is how often a container writes a log line; default 1s.
	LogInterval time.Duration
}

// maxDNSSANs is how many node names the serving certificate lists; with
// more nodes it carries the IP alone, since every TLS handshake sends it.
const maxDNSSANs = 64

func (k *KubeletConfig) withDefaults() error {
	if !k.Enabled {
		return nil
	}
	if k.Address == "" {
		k.Address = "127.0.0.1"
	}
	if net.ParseIP(k.Address) == nil {
		return fmt.Errorf("sim: Kubelet.Address must be an IP address, got %q", k.Address)
	}
	if k.Port < 0 || k.Port > 65535 {
		return fmt.Errorf("sim: Kubelet.Port must be in 0..65535, got %d", k.Port)
	}
	if k.CertificateTimeout < 0 || k.LogInterval < 0 {
		return errors.New("sim: Kubelet.CertificateTimeout and LogInterval must not be negative")
	}
	if k.CertificateTimeout == 0 {
		k.CertificateTimeout = time.Minute
	}
	return nil
}

// kubeletListener is the running kubelet API: its address as nodes report
// it, and the connections to close on Stop (exec, attach and port-forward
// hijack theirs, which http.Server.Close leaves open).
type kubeletListener struct {
	addr string
	port int32
	srv  *http.Server

	mu struct {
		sync.Mutex
		hijacked map[net.Conn]struct{}
	}
}

// startKubelet listens, gets the serving certificate from the cluster and
// serves the kubelet API until ctx ends; it runs before registration, so
// the nodes' first status carries the address.
func (s *Sim) startKubelet(ctx context.Context) error {
	kc := &s.cfg.Kubelet
	var cas *x509.CertPool
	if !kc.Anonymous {
		var err error
		if cas, err = clusterCAs(s.cfg.RESTConfig.TLSClientConfig.CAData, s.cfg.RESTConfig.TLSClientConfig.CAFile); err != nil {
			return err
		}
	}
	ks, err := kubeletserver.New(kubeletserver.Config{
		Pods:        s.pods,
		LogInterval: kc.LogInterval,
		ClientCAs:   cas,
		Anonymous:   kc.Anonymous,
		Metrics:     s.cfg.Metrics,
		Clock:       s.cfg.Clock,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(kc.Address, strconv.Itoa(kc.Port)))
	if err != nil {
		return fmt.Errorf("sim: kubelet listener: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	var dns []string
	if len(s.nodes) <= maxDNSSANs {
		dns = s.NodeNames()
	}
	cert, err := kubeletserver.ServingCertificate(ctx, s.client, kubeletserver.CertificateRequest{
		NodeName: s.nodes[0].name,
		IPs:      []net.IP{net.ParseIP(kc.Address)},
		DNSNames: dns,
		Timeout:  kc.CertificateTimeout,
		Logger:   s.cfg.Logger,
	})
	if err != nil {
		l.Close()
		return fmt.Errorf("sim: kubelet serving certificate: %w", err)
	}
	kl := &kubeletListener{addr: kc.Address, port: int32(port)}
	kl.mu.hijacked = map[net.Conn]struct{}{}
	kl.srv = &http.Server{
		Handler:           ks.Handler(),
		TLSConfig:         ks.TLSConfig(cert),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateHijacked {
				kl.mu.Lock()
				kl.mu.hijacked[c] = struct{}{}
				kl.mu.Unlock()
			}
		},
		ErrorLog: nil,
	}
	s.kubelet = kl
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := kl.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.cfg.Logger.Error("kubelet API server stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		kl.close()
	}()
	s.cfg.Logger.Info("serving the hollow nodes' kubelet API", "address", net.JoinHostPort(kl.addr, strconv.Itoa(port)))
	return nil
}

// close stops the server and every stream it handed off.
func (kl *kubeletListener) close() {
	_ = kl.srv.Close()
	kl.mu.Lock()
	defer kl.mu.Unlock()
	for c := range kl.mu.hijacked {
		_ = c.Close()
	}
	kl.mu.hijacked = nil
}

// KubeletAddress is the host:port the hollow nodes' kubelet API listens
// on, or "" when it is off; call it after Start has returned.
func (s *Sim) KubeletAddress() string {
	if s.kubelet == nil {
		return ""
	}
	return net.JoinHostPort(s.kubelet.addr, strconv.Itoa(int(s.kubelet.port)))
}

// clusterCAs is the cluster CA from the kubeconfig: it issued the API
// server's kubelet client certificate.
func clusterCAs(data []byte, file string) (*x509.CertPool, error) {
	if len(data) == 0 && file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("sim: reading the cluster CA for the kubelet API: %w", err)
		}
	}
	pool := x509.NewCertPool()
	if len(data) == 0 || !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("sim: the kubeconfig has no cluster CA to verify kubelet API clients with; set Kubelet.Anonymous (--kubelet-anonymous) to serve without client certificates")
	}
	return pool, nil
}

// podIndex finds any pod of the process's nodes by namespace and name, for
// the kubelet API (whose paths do not name the node). Lock order: a node's
// mu, then the index's; lookups release the index before taking a node's.
// A nil *podIndex indexes nothing (the kubelet API is off).
type podIndex struct {
	byName map[string]*node // Sim.byName, for NodeDown
	mu     sync.RWMutex
	m      map[podKey]podRef
}

type podKey struct{ ns, name string }

type podRef struct {
	n   *node
	uid types.UID
}

func newPodIndex(byName map[string]*node) *podIndex {
	return &podIndex{byName: byName, m: map[podKey]podRef{}}
}

// add records that n runs pod (replacing an older pod of the same name).
func (x *podIndex) add(n *node, pod *corev1.Pod) {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.m[podKey{pod.Namespace, pod.Name}] = podRef{n: n, uid: pod.UID}
	x.mu.Unlock()
}

// remove forgets pod, unless the name now belongs to a newer pod.
func (x *podIndex) remove(pod *corev1.Pod) {
	if x == nil {
		return
	}
	k := podKey{pod.Namespace, pod.Name}
	x.mu.Lock()
	if x.m[k].uid == pod.UID {
		delete(x.m, k)
	}
	x.mu.Unlock()
}

// Pod implements kubeletserver.Pods.
func (x *podIndex) Pod(namespace, name string) (*corev1.Pod, string, bool) {
	x.mu.RLock()
	ref, ok := x.m[podKey{namespace, name}]
	x.mu.RUnlock()
	if !ok {
		return nil, "", false
	}
	ref.n.mu.Lock()
	st, ok := ref.n.mu.pods[ref.uid]
	var pod *corev1.Pod
	if ok {
		pod = st.pod
	}
	ref.n.mu.Unlock()
	if !ok {
		return nil, "", false
	}
	return pod, ref.n.name, true
}

// NodeDown implements kubeletserver.Pods: a failed node's kubelet is down.
func (x *podIndex) NodeDown(name string) bool {
	n, ok := x.byName[name]
	return ok && n.isFailed()
}

var _ kubeletserver.Pods = (*podIndex)(nil)

// kubeletEndpoint is the address and port a node reports.
func (n *node) kubeletEndpoint() (string, int32) {
	if kl := n.s.kubelet; kl != nil {
		return kl.addr, kl.port
	}
	return n.hostIP, 10250
}
