package sim

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// NodeIdentity says whom a hollow node's requests act as.
type NodeIdentity string

const (
	// NodeIdentityImpersonate: each node's requests carry
	// Impersonate-User: system:node:<name> and Impersonate-Group:
	// system:nodes, so the API server authorizes them as that node (the
	// Node authorizer, NodeRestriction and RBAC's system:node role), as a
	// kubelet's own client certificate would. The simulator's credentials
	// must allow impersonating users and groups. One identity per node
	// without one TLS connection per node: 10,000 client certificates
	// would need 10,000 connections, which costs the server far more than
	// the kubelets it imitates share among themselves.
	NodeIdentityImpersonate NodeIdentity = "impersonate"
	// NodeIdentityToken: each node's requests carry its own bearer token
	// (Config.NodeTokens, e.g. from the API server's --token-auth-file,
	// written by WriteNodeTokens), so nodes authenticate as
	// system:node:<name> without the simulator's credentials being able to
	// impersonate anyone. Node requests share their own TLS connections,
	// which present no client certificate (a client certificate would
	// authenticate the connection before the token is looked at); the
	// simulator's own requests (the shared pod watch) use its kubeconfig.
	NodeIdentityToken NodeIdentity = "token"
	// NodeIdentitySelf: every request acts as the simulator's own
	// credentials.
	NodeIdentitySelf NodeIdentity = "self"
)

type nodeIdentityKey struct{}

// nodeHeaders are one node's identity headers (impersonation, or its
// Authorization with NodeIdentityToken), built once and shared by all its
// requests (never modified).
type nodeHeaders struct {
	user, group []string
	auth        []string
	// conn picks the node's connection pool (spreadConns).
	conn int
}

func newNodeTokenHeaders(token string, conn int) *nodeHeaders {
	return &nodeHeaders{auth: []string{"Bearer " + token}, conn: conn}
}

func newNodeHeaders(name string, conn int) *nodeHeaders {
	return &nodeHeaders{user: []string{"system:node:" + name}, group: []string{"system:nodes"}, conn: conn}
}

// withNodeIdentity marks ctx's requests as node h's.
func withNodeIdentity(ctx context.Context, h *nodeHeaders) context.Context {
	return context.WithValue(ctx, nodeIdentityKey{}, h)
}

// impersonateNodes sets the impersonation headers of the node whose
// context a request carries; other requests (the shared pod watch) go as
// the simulator.
type impersonateNodes struct {
	next http.RoundTripper
	// denied counts node requests answered 401 or 403.
	denied *atomic.Uint64
}

func (t impersonateNodes) RoundTrip(req *http.Request) (*http.Response, error) {
	h, ok := req.Context().Value(nodeIdentityKey{}).(*nodeHeaders)
	if !ok {
		return t.next.RoundTrip(req)
	}
	r := utilnet.CloneRequest(req)
	r.Header["Impersonate-User"] = h.user
	r.Header["Impersonate-Group"] = h.group
	return countDenied(t.next.RoundTrip(r))(t.denied)
}

// countDenied passes a round trip's result through, counting a 401 or 403
// in denied.
func countDenied(resp *http.Response, err error) func(*atomic.Uint64) (*http.Response, error) {
	return func(denied *atomic.Uint64) (*http.Response, error) {
		if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			denied.Add(1)
		}
		return resp, err
	}
}

// WrappedRoundTripper lets client-go's transport debugging see through.
func (t impersonateNodes) WrappedRoundTripper() http.RoundTripper { return t.next }

// nodeTokens sets the Authorization of the node whose context a request
// carries (NodeIdentityToken). It wraps a transport without client
// certificate or credentials of its own.
type nodeTokens struct {
	next   http.RoundTripper
	denied *atomic.Uint64
}

func (t nodeTokens) RoundTrip(req *http.Request) (*http.Response, error) {
	h, ok := req.Context().Value(nodeIdentityKey{}).(*nodeHeaders)
	if !ok || h.auth == nil {
		// byIdentity sends only node requests here.
		return nil, fmt.Errorf("sim: request %s %s has no node identity", req.Method, req.URL.Path)
	}
	r := utilnet.CloneRequest(req)
	r.Header["Authorization"] = h.auth
	return countDenied(t.next.RoundTrip(r))(t.denied)
}

func (t nodeTokens) WrappedRoundTripper() http.RoundTripper { return t.next }

// byIdentity sends a node's requests to node and the rest to self.
type byIdentity struct {
	self, node http.RoundTripper
}

func (t byIdentity) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Context().Value(nodeIdentityKey{}).(*nodeHeaders); ok {
		return t.node.RoundTrip(req)
	}
	return t.self.RoundTrip(req)
}

// tokenClients builds the HTTP clients for NodeIdentityToken: rc's own
// (simClients) for the simulator's requests, and credential-less ones
// carrying each node's token for the nodes', chosen per request.
func tokenClients(rc *rest.Config, heartbeatsOverHTTP2 bool, conns int, denied *atomic.Uint64) (shared, beats *http.Client, err error) {
	// Before simClients(rc) replaces rc's TLS settings with its transport.
	anon := rest.AnonymousClientConfig(rc)
	anon.Wrap(func(rt http.RoundTripper) http.RoundTripper { return nodeTokens{next: rt, denied: denied} })
	selfShared, selfBeats, err := simClients(rc, heartbeatsOverHTTP2, 1)
	if err != nil {
		return nil, nil, err
	}
	nodeShared, nodeBeats, err := simClients(anon, heartbeatsOverHTTP2, conns)
	if err != nil {
		return nil, nil, err
	}
	route := func(self, node *http.Client) *http.Client {
		return &http.Client{Transport: byIdentity{self: self.Transport, node: node.Transport}, Timeout: self.Timeout}
	}
	return route(selfShared, nodeShared), route(selfBeats, nodeBeats), nil
}
