package approver

import (
	"context"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates"
)

// Subresources of certificatesigningrequests upstream authorizes automatic
// approval with (verb "create"); RBAC roles grant them.
const (
	// NodeClient: a client certificate for any node (bootstrap tokens).
	NodeClient = "nodeclient"
	// SelfNodeClient: a client certificate for the requesting node itself.
	SelfNodeClient = "selfnodeclient"
)

// BootstrappersGroup is the group of every bootstrap token user.
const BootstrappersGroup = "system:bootstrappers"

// Authorizer decides whether a CSR's requestor may have it approved
// automatically: whether the user in spec (username, uid, groups, extra)
// may "create" certificatesigningrequests/<subresource>. Implementations
// must be safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, requestor *certificatesv1.CertificateSigningRequestSpec, subresource string) (bool, error)
}

// GroupAuthorizer allows nodeclient to members of system:bootstrappers or
// system:nodes, and selfnodeclient to members of system:nodes (the
// recognizer has already checked that the requestor is the node named in
// the request): the grants a kubeadm cluster's RBAC bindings make, which
// Myriad's default policy (upstream's) does not contain. Node bootstrap
// (issue 27) adds those bindings and replaces this with a
// SubjectAccessReview against the cluster's authorizer, as upstream's
// csrapproving does.
type GroupAuthorizer struct{}

var _ Authorizer = GroupAuthorizer{}

// Authorize implements Authorizer.
func (GroupAuthorizer) Authorize(_ context.Context, r *certificatesv1.CertificateSigningRequestSpec, subresource string) (bool, error) {
	nodes := slices.Contains(r.Groups, certificates.NodesGroup)
	switch subresource {
	case NodeClient:
		return nodes || slices.Contains(r.Groups, BootstrappersGroup), nil
	case SelfNodeClient:
		return nodes, nil
	}
	return false, nil
}
