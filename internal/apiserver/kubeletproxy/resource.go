package kubeletproxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// NodeProxy serves nodes/proxy and nodes/proxy/{path}: id is "name",
// "name:port" or "scheme:name:port". The kubelet's own port goes through
// the kubelet transport (client certificate, verified serving
// certificate); any other port through the plain proxy transport, as
// upstream's node ResourceLocation.
func (p *Proxy) NodeProxy(w http.ResponseWriter, r *http.Request, id, path string) {
	if !proxyMethods[r.Method] {
		p.cfg.WriteError(w, r, methodNotAllowed(nodesGR, r))
		return
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		p.cfg.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", id)))
		return
	}
	conn, err := p.nodeConnection(r.Context(), name)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	if err := p.proxyableHost(r.Context(), conn.Host); err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	var loc *url.URL
	var rt http.RoundTripper
	if port == "" || port == conn.Port {
		loc, rt = &url.URL{Scheme: conn.Scheme, Host: conn.HostPort()}, conn.Transport
	} else {
		if scheme == "" {
			scheme = "http"
		}
		loc, rt = &url.URL{Scheme: scheme, Host: net.JoinHostPort(conn.Host, port)}, p.proxyTransport
	}
	joinPath(loc, path)
	p.serveProxy(w, r, loc, rt, "nodes")
}

// PodProxy serves pods/proxy and pods/proxy/{path} to the pod's IP: id is
// "name", "name:port" or "scheme:name:port"; without a port, the first
// declared container port (upstream's pod ResourceLocation).
func (p *Proxy) PodProxy(w http.ResponseWriter, r *http.Request, namespace, id, path string) {
	if !proxyMethods[r.Method] {
		p.cfg.WriteError(w, r, methodNotAllowed(podsGR, r))
		return
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		p.cfg.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", id)))
		return
	}
	pod, err := p.cfg.Objects.Pod(r.Context(), namespace, name)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	var podIP string
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	if !p.allowedIP(net.ParseIP(podIP)) {
		p.cfg.WriteError(w, r, apierrors.NewBadRequest("address not allowed"))
		return
	}
	if scheme == "" {
		scheme = "http"
	}
	loc := &url.URL{Scheme: scheme, Host: podIP}
	if port != "" {
		loc.Host = net.JoinHostPort(podIP, port)
	} else if net.ParseIP(podIP).To4() == nil {
		loc.Host = "[" + podIP + "]"
	}
	joinPath(loc, path)
	p.serveProxy(w, r, loc, p.proxyTransport, "pods")
}

// ServiceProxy serves services/proxy and services/proxy/{path} to a ready
// endpoint of the Service: id is "name", "name:port" (port number or
// name) or "scheme:name:port", as upstream's service ResourceLocation.
func (p *Proxy) ServiceProxy(w http.ResponseWriter, r *http.Request, namespace, id, path string) {
	if !proxyMethods[r.Method] {
		p.cfg.WriteError(w, r, methodNotAllowed(servicesGR, r))
		return
	}
	loc, err := p.serviceLocation(r.Context(), namespace, id)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	joinPath(loc, path)
	p.serveProxy(w, r, loc, p.proxyTransport, "services")
}

func (p *Proxy) serviceLocation(ctx context.Context, namespace, id string) (*url.URL, error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", id))
	}
	if scheme == "" {
		scheme = "http"
	}
	// A port number names the Service port whose name the endpoints use.
	if num, err := strconv.ParseInt(port, 10, 64); err == nil {
		svc, err := p.cfg.Objects.Service(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		found := false
		for _, sp := range svc.Spec.Ports {
			if int64(sp.Port) == num {
				port, found = sp.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", num, name))
		}
	}
	eps, err := p.cfg.Objects.Endpoints(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if len(eps.Subsets) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	// Start from a random subset and address so that load spreads.
	ssSeed := rand.IntN(len(eps.Subsets))
	for i := range eps.Subsets {
		ss := &eps.Subsets[(ssSeed+i)%len(eps.Subsets)]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, sp := range ss.Ports {
			if sp.Name != port {
				continue
			}
			seed := rand.IntN(len(ss.Addresses))
			for j := range ss.Addresses {
				addr := ss.Addresses[(seed+j)%len(ss.Addresses)]
				if !p.allowedIP(net.ParseIP(addr.IP)) {
					continue
				}
				return &url.URL{Scheme: scheme, Host: net.JoinHostPort(addr.IP, strconv.Itoa(int(sp.Port)))}, nil
			}
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", id))
}

// serveProxy proxies r to loc: upstream's UpgradeAwareHandler with the
// transport wrapped (URL rewriting, X-Forwarded-*), upgrades passed
// through. Only the wait for the backend's headers is recorded.
func (p *Proxy) serveProxy(w http.ResponseWriter, r *http.Request, loc *url.URL, rt http.RoundTripper, resource string) {
	h := p.proxyHandler(loc, rt, true, false)
	h.ServeHTTP(p.record(w, resource, "proxy"), r)
}
