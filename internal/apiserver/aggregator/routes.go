package aggregator

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
)

// apiServiceLister lists APIServices from the informer's indexer.
type apiServiceLister struct{ idx toolscache.Indexer }

func (l apiServiceLister) list() []*apiregistrationv1.APIService {
	var out []*apiregistrationv1.APIService
	_ = toolscache.ListAll(l.idx, labels.Everything(), func(o any) {
		out = append(out, o.(*apiregistrationv1.APIService))
	})
	return out
}

func (l apiServiceLister) get(name string) (*apiregistrationv1.APIService, bool) {
	o, ok, err := l.idx.GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	return o.(*apiregistrationv1.APIService), true
}

// remoteAPI is how requests for one remote group version are served.
type remoteAPI struct {
	name                   string // the APIService's
	gv                     schema.GroupVersion
	namespace, service     string
	port                   int32
	available              bool
	transport              http.RoundTripper
	transportErr           error
	caBundle               []byte
	insecureSkipTLSVerify  bool
	groupPriority, version int32
}

// routeTable is an immutable snapshot of the APIServices.
type routeTable struct {
	// remote holds the group versions served by another server.
	remote map[schema.GroupVersion]*remoteAPI
	// remoteGroups lists, per group with a remote version, every
	// APIService of the group, highest version priority first; order
	// lists those groups highest group priority first.
	remoteGroups map[string][]*apiregistrationv1.APIService
	order        []string
	// services are the remote APIServices' Services, "namespace/name".
	services map[string]bool
}

// rebuildRoutes snapshots the APIService informer. APIServices are few
// (tens) and change rarely, so a full rebuild is simplest.
func (a *Aggregator) rebuildRoutes() {
	a.rebuildMu.Lock()
	defer a.rebuildMu.Unlock()
	all := a.apiServiceLister.list()
	t := &routeTable{remote: map[schema.GroupVersion]*remoteAPI{}, remoteGroups: map[string][]*apiregistrationv1.APIService{}, services: map[string]bool{}}
	old := a.routes.Load()
	for _, s := range all {
		if s.Spec.Service == nil {
			continue
		}
		gv := schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
		r := &remoteAPI{
			name: s.Name, gv: gv, namespace: s.Spec.Service.Namespace, service: s.Spec.Service.Name, port: 443,
			available:             helper.IsAPIServiceConditionTrue(s, apiregistrationv1.Available),
			caBundle:              s.Spec.CABundle,
			insecureSkipTLSVerify: s.Spec.InsecureSkipTLSVerify,
			groupPriority:         s.Spec.GroupPriorityMinimum, version: s.Spec.VersionPriority,
		}
		if s.Spec.Service.Port != nil {
			r.port = *s.Spec.Service.Port
		}
		// A status change keeps the transport (and its connections).
		if prev := old.remote[gv]; prev != nil && prev.sameTLS(r) {
			r.transport, r.transportErr = prev.transport, prev.transportErr
		} else {
			r.transport, r.transportErr = transport.New(a.transportConfig(r))
		}
		t.remote[gv] = r
		t.services[r.namespace+"/"+r.service] = true
	}
	for _, group := range helper.SortedByGroupAndVersion(all) {
		g := group[0].Spec.Group
		remote := false
		for _, s := range group {
			remote = remote || s.Spec.Service != nil
		}
		if remote {
			t.remoteGroups[g] = group
			t.order = append(t.order, g)
		}
	}
	a.routes.Store(t)
	a.discovery.invalidate()
}

func (r *remoteAPI) sameTLS(o *remoteAPI) bool {
	return r.namespace == o.namespace && r.service == o.service && r.insecureSkipTLSVerify == o.insecureSkipTLSVerify &&
		string(r.caBundle) == string(o.caBundle)
}

// transportConfig is upstream's remote.BuildTransportConfig: the
// Service's DNS name for SNI and verification, the CA bundle or no
// verification, and the front-proxy client certificate.
func (a *Aggregator) transportConfig(r *remoteAPI) *transport.Config {
	return &transport.Config{TLS: transport.TLSConfig{
		Insecure:   r.insecureSkipTLSVerify,
		ServerName: r.service + "." + r.namespace + ".svc",
		CAData:     r.caBundle,
		CertData:   a.cfg.ProxyClientCertPEM,
		KeyData:    a.cfg.ProxyClientKeyPEM,
	}}
}

// handler routes between the aggregated APIs and the API server.
type handler struct {
	a        *Aggregator
	delegate http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/apis")
	if !ok || (rest != "" && rest[0] != '/') {
		if strings.HasPrefix(r.URL.Path, openAPIV3Path) {
			if t := h.a.routes.Load(); len(t.remote) > 0 && h.a.serveOpenAPIV3(w, r, h.delegate, t) {
				return
			}
		}
		h.delegate.ServeHTTP(w, r)
		return
	}
	t := h.a.routes.Load()
	if len(t.remote) == 0 {
		h.delegate.ServeHTTP(w, r)
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	if rest == "" {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			h.a.serveAPIs(w, r, h.delegate, t)
			return
		}
		h.delegate.ServeHTTP(w, r)
		return
	}
	group, rest, _ := strings.Cut(rest, "/")
	version, _, _ := strings.Cut(rest, "/")
	if version == "" {
		if _, ok := t.remoteGroups[group]; ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			h.a.serveGroup(w, r, h.delegate, t, group)
			return
		}
		h.delegate.ServeHTTP(w, r)
		return
	}
	if remote, ok := t.remote[schema.GroupVersion{Group: group, Version: version}]; ok {
		h.a.proxy(w, r, remote)
		return
	}
	h.delegate.ServeHTTP(w, r)
}
