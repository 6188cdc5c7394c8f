package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// serviceHealth answers cloud load balancers' health checks for
// LoadBalancer Services with externalTrafficPolicy Local, as upstream's
// ServiceHealthServer does: an HTTP server on each such Service's
// spec.healthCheckNodePort, 200 while this node has ready endpoints of the
// Service (so the load balancer sends it traffic it can keep local) and
// 503 otherwise. Servers open and close as Services come and go.
type serviceHealth struct {
	nodeName string
	host     string // the address listened on; "" for all
	recorder EventRecorder
	log      *slog.Logger
	healthy  func() bool // the proxy's own health ("serviceProxyHealthy")

	mu struct {
		sync.Mutex
		services map[types.NamespacedName]*hcServer
		closed   bool
	}
	wg sync.WaitGroup
}

// hcServer is one Service's health check server.
type hcServer struct {
	port uint16
	srv  *http.Server
	// endpoints is the node's ready endpoint count; guarded by
	// serviceHealth.mu.
	endpoints int
}

func newServiceHealth(nodeName, host string, recorder EventRecorder, log *slog.Logger, healthy func() bool) *serviceHealth {
	s := &serviceHealth{nodeName: nodeName, host: host, recorder: recorder, log: log, healthy: healthy}
	s.mu.services = map[types.NamespacedName]*hcServer{}
	return s
}

// sync makes the open servers those of ports (Service → health check node
// port), each answering with the Service's count in local. A port that
// failed to open is tried again on the next call.
func (s *serviceHealth) sync(ports map[types.NamespacedName]uint16, local map[types.NamespacedName]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return
	}
	for key, hc := range s.mu.services {
		if port, ok := ports[key]; !ok || port != hc.port {
			s.log.Info("closing service health check", "service", key, "port", hc.port)
			_ = hc.srv.Close()
			delete(s.mu.services, key)
		}
	}
	for key, port := range ports {
		hc := s.mu.services[key]
		if hc == nil {
			var err error
			if hc, err = s.openLocked(key, port); err != nil {
				msg := fmt.Sprintf("node %s failed to start healthcheck %q on port %d: %v", s.nodeName, key.String(), port, err)
				s.log.Error("failed to start service health check", "service", key, "port", port, "err", err)
				if s.recorder != nil {
					s.recorder.Eventf(&v1.ObjectReference{Kind: "Service", Namespace: key.Namespace, Name: key.Name, UID: types.UID(key.String())},
						v1.EventTypeWarning, "FailedToStartServiceHealthcheck", "%s", msg)
				}
				continue
			}
			s.mu.services[key] = hc
		}
		hc.endpoints = local[key]
	}
}

func (s *serviceHealth) openLocked(key types.NamespacedName, port uint16) (*hcServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.host, strconv.Itoa(int(port))))
	if err != nil {
		return nil, err
	}
	hc := &hcServer{port: port}
	hc.srv = &http.Server{Handler: s.handler(key, hc), ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("opening service health check", "service", key, "port", port)
	s.wg.Go(func() {
		if err := hc.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("service health check stopped", "service", key, "err", err)
		}
	})
	return hc, nil
}

// handler answers as upstream's hcHandler: the count in a header and the
// body, 200 only when the node has endpoints and the proxy keeps up.
func (s *serviceHealth) handler(key types.NamespacedName, hc *hcServer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		count := hc.endpoints
		s.mu.Unlock()
		healthy := s.healthy()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(count))
		if count != 0 && healthy {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "{\n\t\"service\": {\n\t\t\"namespace\": %q,\n\t\t\"name\": %q\n\t},\n\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": %v\n}",
			key.Namespace, key.Name, count, healthy)
	})
}

// close stops every server and waits for them; sync does nothing after.
func (s *serviceHealth) close() {
	s.mu.Lock()
	s.mu.closed = true
	for key, hc := range s.mu.services {
		_ = hc.srv.Close()
		delete(s.mu.services, key)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ports returns the open health check ports (tests).
func (s *serviceHealth) ports() map[types.NamespacedName]uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[types.NamespacedName]uint16{}
	for k, hc := range s.mu.services {
		out[k] = hc.port
	}
	return out
}

// HealthCheckPorts returns the Services whose health check node ports the
// proxy serves now, and the ports.
func (p *Proxier) HealthCheckPorts() map[types.NamespacedName]uint16 {
	if p.health == nil {
		return nil
	}
	return p.health.ports()
}

// Close stops the health check servers; Run calls it when it returns.
func (p *Proxier) Close() {
	if p.health != nil {
		p.health.close()
	}
}
