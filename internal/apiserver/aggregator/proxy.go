package aggregator

import (
	"encoding/json"
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/proxy"
	apiserverproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/transport"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// proxy forwards r to one ready endpoint of remote's Service, as
// upstream's proxyHandler: the answers for an unavailable APIService, an
// unresolvable Service and a missing user are upstream's plain-text ones.
func (a *Aggregator) proxy(w http.ResponseWriter, r *http.Request, remote *remoteAPI) {
	if !remote.available {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	if remote.transportErr != nil {
		http.Error(w, remote.transportErr.Error(), http.StatusInternalServerError)
		return
	}
	user, ok := request.UserFrom(r.Context())
	if !ok {
		http.Error(w, "missing user", http.StatusInternalServerError)
		return
	}
	loc, err := apiserverproxy.ResolveEndpoint(a.serviceLister, a.sliceGetter, remote.namespace, remote.service, remote.port)
	if err != nil {
		a.log.Warn("cannot resolve the service of an aggregated API", "apiservice", remote.name, "service", remote.namespace+"/"+remote.service, "err", err)
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	location := &url.URL{Scheme: "https", Host: loc.Host, Path: r.URL.Path, RawQuery: r.URL.Query().Encode()}
	newReq, cancel := apiserverproxy.NewRequestForProxy(location, r)
	defer cancel()
	// The front-proxy headers carry the authenticated user; whatever the
	// client sent in them is dropped (the round tripper deletes them
	// first, and the upgrade path sets them on the request, replacing).
	upgrade := httpstream.IsUpgradeRequest(r)
	rt := transport.NewAuthProxyRoundTripper(user.Name, user.UID, user.Groups, user.Extra, remote.transport)
	if upgrade {
		transport.SetAuthProxyHeaders(newReq, user.Name, user.UID, user.Groups, user.Extra)
	}
	h := proxy.NewUpgradeAwareHandler(location, rt, true, upgrade, responder{w: w})
	// Upstream's --aggregator-reject-forwarding-redirect default: an
	// extension server's redirect is not passed on to the client.
	h.RejectForwardingRedirects = true
	h.ServeHTTP(w, newReq)
}

// responder is upstream's: errors of the proxied connection are 503s.
type responder struct{ w http.ResponseWriter }

func (r responder) Object(code int, obj runtime.Object) {
	r.w.Header().Set("Content-Type", "application/json")
	r.w.WriteHeader(code)
	_ = json.NewEncoder(r.w).Encode(obj)
}

func (r responder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	http.Error(r.w, err.Error(), http.StatusServiceUnavailable)
}
