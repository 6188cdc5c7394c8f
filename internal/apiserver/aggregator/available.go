package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
)

// maxDiscoveryBytes bounds an extension server's discovery answer.
const maxDiscoveryBytes = 10 << 20

// availabilityLoop checks every APIService each CheckInterval and after
// every change, until Stop.
func (a *Aggregator) availabilityLoop() {
	defer a.wg.Done()
	t := time.NewTicker(a.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		case <-a.kick:
		}
		if !a.Ready() {
			continue
		}
		a.checkAll()
	}
}

// checkAll checks every APIService once; remote ones concurrently, so one
// that hangs (up to CheckTimeout) does not delay the others.
func (a *Aggregator) checkAll() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	a.restoreLocal(ctx)
	all := a.apiServiceLister.list()
	done := make(chan struct{}, len(all))
	for _, s := range all {
		go func() {
			defer func() { done <- struct{}{} }()
			a.checkOne(ctx, s)
		}()
	}
	for range all {
		<-done
	}
	a.discovery.forget(a.routes.Load().remote)
	a.metrics.forget(all)
}

// checkOne computes s's Available condition and writes it when it
// changed, as upstream's AvailableConditionController.sync (and the
// local one for Local APIServices).
func (a *Aggregator) checkOne(ctx context.Context, orig *apiregistrationv1.APIService) {
	s := orig.DeepCopy()
	cond, list := a.availability(ctx, s)
	if s.Spec.Service != nil {
		gv := schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
		a.discovery.set(gv, list)
		if list != nil {
			a.discovery.setOpenAPIV3(gv, a.hasOpenAPIV3(ctx, s))
		}
	}
	helper.SetAPIServiceCondition(s, cond)
	a.metrics.set(s)
	if apiequality.Semantic.DeepEqual(orig.Status, s.Status) {
		return
	}
	if old := helper.GetAPIServiceConditionByType(orig, apiregistrationv1.Available); old == nil || old.Status != cond.Status {
		a.log.Info("APIService availability changed", "apiservice", s.Name, "available", cond.Status, "reason", cond.Reason, "message", cond.Message)
		if cond.Status != apiregistrationv1.ConditionTrue {
			a.metrics.unavailableTotal(s.Name, cond.Reason)
		}
	}
	if _, err := a.cfg.Objects.UpdateStatus(ctx, apiServicesGVR, s); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		a.log.Warn("cannot update the status of an APIService", "apiservice", s.Name, "err", err)
	}
}

// availability is the Available condition of s now, with upstream's
// reasons and messages, and the discovery document its server answered
// (nil unless the check reached it).
func (a *Aggregator) availability(ctx context.Context, s *apiregistrationv1.APIService) (apiregistrationv1.APIServiceCondition, *metav1.APIResourceList) {
	cond := apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, LastTransitionTime: metav1.Now()}
	if s.Spec.Service == nil {
		return helper.NewLocalAvailableAPIServiceCondition(), nil
	}
	ref := s.Spec.Service
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	fail := func(status apiregistrationv1.ConditionStatus, reason, format string, args ...any) (apiregistrationv1.APIServiceCondition, *metav1.APIResourceList) {
		cond.Status, cond.Reason, cond.Message = status, reason, fmt.Sprintf(format, args...)
		return cond, nil
	}
	svc, err := a.serviceLister.Services(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return fail(apiregistrationv1.ConditionFalse, "ServiceNotFound", "service/%s in %q is not present", ref.Name, ref.Namespace)
	} else if err != nil {
		return fail(apiregistrationv1.ConditionUnknown, "ServiceAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
	}
	if svc.Spec.Type == corev1.ServiceTypeClusterIP {
		portName, found := "", false
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				portName, found = p.Name, true
				break
			}
		}
		if !found {
			return fail(apiregistrationv1.ConditionFalse, "ServicePortError", "service/%s in %q is not listening on port %d", ref.Name, ref.Namespace, port)
		}
		eps, err := a.sliceGetter.GetEndpointSlices(ref.Namespace, ref.Name)
		if err != nil {
			return fail(apiregistrationv1.ConditionUnknown, "EndpointsAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
		} else if len(eps) == 0 {
			return fail(apiregistrationv1.ConditionFalse, "EndpointsNotFound", "cannot find endpointslices for service/%s in %q", ref.Name, ref.Namespace)
		}
		if !hasAvailableEndpoint(portName, eps) {
			return fail(apiregistrationv1.ConditionFalse, "MissingEndpoints", "endpointslices for service/%s in %q have no addresses with port name %q", ref.Name, ref.Namespace, portName)
		}
	}
	list, err := a.fetchDiscovery(ctx, s, port)
	if err != nil {
		return fail(apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck", "%s", err.Error())
	}
	cond.Reason, cond.Message = "Passed", "all checks passed"
	return cond, list
}

// hasAvailableEndpoint is upstream's: a slice with a ready endpoint that
// serves the named port.
func hasAvailableEndpoint(portName string, es []*discoveryv1.EndpointSlice) bool {
	return slices.ContainsFunc(es, func(s *discoveryv1.EndpointSlice) bool {
		if !slices.ContainsFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool {
			return e.Conditions.Ready == nil || *e.Conditions.Ready
		}) {
			return false
		}
		return slices.ContainsFunc(s.Ports, func(p discoveryv1.EndpointPort) bool {
			return p.Name != nil && *p.Name == portName && p.Port != nil
		})
	})
}

// fetchDiscovery GETs /apis/<group>/<version> from one endpoint as
// upstream's discovery check does (as system:kube-aggregator in
// system:masters, so authorization cannot fail it), tried on up to three
// endpoints, and decodes the answer, which is also what discovery merges.
// Errors read as upstream's.
func (a *Aggregator) fetchDiscovery(ctx context.Context, s *apiregistrationv1.APIService, port int32) (*metav1.APIResourceList, error) {
	remote := a.routes.Load().remote[schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}]
	var rt http.RoundTripper
	if remote != nil && remote.transport != nil {
		rt = remote.transport
	} else {
		r := &remoteAPI{namespace: s.Spec.Service.Namespace, service: s.Spec.Service.Name, caBundle: s.Spec.CABundle, insecureSkipTLSVerify: s.Spec.InsecureSkipTLSVerify}
		var err error
		if rt, err = transport.New(a.transportConfig(r)); err != nil {
			return nil, err
		}
	}
	client := &http.Client{Transport: rt, Timeout: a.cfg.CheckTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var lastErr error
	for range 3 {
		loc, err := apiserverproxy.ResolveEndpoint(a.serviceLister, a.sliceGetter, s.Spec.Service.Namespace, s.Spec.Service.Name, port)
		if err != nil {
			lastErr = err
			continue
		}
		loc.Path = "/apis/" + s.Spec.Group + "/" + s.Spec.Version
		list, err := getDiscovery(ctx, client, loc.String())
		if err == nil {
			return list, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// hasOpenAPIV3 reports whether s's server lists its group version in
// /openapi/v3 (a failure is a no: the document is optional).
func (a *Aggregator) hasOpenAPIV3(ctx context.Context, s *apiregistrationv1.APIService) bool {
	gv := schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
	remote := a.routes.Load().remote[gv]
	if remote == nil || remote.transport == nil {
		return false
	}
	loc, err := apiserverproxy.ResolveEndpoint(a.serviceLister, a.sliceGetter, remote.namespace, remote.service, remote.port)
	if err != nil {
		return false
	}
	loc.Path = openAPIV3Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	client := &http.Client{Transport: remote.transport, Timeout: a.cfg.CheckTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var doc openAPIV3Discovery
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, maxDiscoveryBytes)).Decode(&doc) != nil {
		return false
	}
	_, ok := doc.Paths[gvPath(gv)]
	return ok
}

func getDiscovery(ctx context.Context, client *http.Client, url string) (*metav1.APIResourceList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	resp, err := client.Do(req)
	if err != nil {
		var timeout interface{ Timeout() bool }
		if errors.As(err, &timeout) && timeout.Timeout() {
			return nil, fmt.Errorf("timed out waiting for %v", url)
		}
		return nil, fmt.Errorf("failing or missing response from %v: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return nil, fmt.Errorf("bad status from %v: %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("failing or missing response from %v: %w", url, err)
	}
	if len(body) > maxDiscoveryBytes {
		return nil, fmt.Errorf("discovery from %v is larger than %d bytes", url, maxDiscoveryBytes)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding discovery from %v: %w", url, err)
	}
	return &list, nil
}

// metrics are upstream's aggregator availability metrics.
type metrics struct {
	unavailable *prometheus.GaugeVec
	total       *prometheus.CounterVec
	mu          sync.Mutex
	names       map[string]bool // guarded by mu: the gauge's label values
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		unavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "aggregator_unavailable_apiservice",
			Help: "Gauge of APIServices which are marked as unavailable broken down by APIService name."}, []string{"name"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aggregator_unavailable_apiservice_total",
			Help: "Counter of APIServices which are marked as unavailable broken down by APIService name and reason."}, []string{"name", "reason"}),
		names: map[string]bool{},
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.unavailable, m.total} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("aggregator: registering metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) set(s *apiregistrationv1.APIService) {
	v := 0.0
	if !helper.IsAPIServiceConditionTrue(s, apiregistrationv1.Available) {
		v = 1
	}
	m.mu.Lock()
	m.names[s.Name] = true
	m.mu.Unlock()
	m.unavailable.WithLabelValues(s.Name).Set(v)
}

func (m *metrics) unavailableTotal(name, reason string) { m.total.WithLabelValues(name, reason).Inc() }

// forget drops the gauges of deleted APIServices.
func (m *metrics) forget(current []*apiregistrationv1.APIService) {
	keep := map[string]bool{}
	for _, s := range current {
		keep[s.Name] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.names {
		if !keep[name] {
			m.unavailable.DeleteLabelValues(name)
			delete(m.names, name)
		}
	}
}
