package sim

import (
	"context"
	"net/http"
	"sync/atomic"

	utilnet "k8s.io/apimachinery/pkg/util/net"
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
	// NodeIdentitySelf: every request acts as the simulator's own
	// credentials.
	NodeIdentitySelf NodeIdentity = "self"
)

type nodeIdentityKey struct{}

// nodeHeaders are one node's impersonation headers, built once and shared
// by all its requests (never modified).
type nodeHeaders struct {
	user, group []string
}

func newNodeHeaders(name string) *nodeHeaders {
	return &nodeHeaders{user: []string{"system:node:" + name}, group: []string{"system:nodes"}}
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
	resp, err := t.next.RoundTrip(r)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.denied.Add(1)
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's transport debugging see through.
func (t impersonateNodes) WrappedRoundTripper() http.RoundTripper { return t.next }
