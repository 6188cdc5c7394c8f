package approver

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Subresources of certificatesigningrequests upstream authorizes automatic
// approval with (verb "create"); RBAC roles grant them.
const (
	// NodeClient: a client certificate for any node (bootstrap tokens).
	NodeClient = "nodeclient"
	// SelfNodeClient: a client certificate for the requesting node itself.
	SelfNodeClient = "selfnodeclient"
)

// Authorizer decides whether a CSR's requestor may have it approved
// automatically: whether the user in spec (username, uid, groups, extra)
// may "create" certificatesigningrequests/<subresource>. Implementations
// must be safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, requestor *certificatesv1.CertificateSigningRequestSpec, subresource string) (bool, error)
}

// SubjectAccessReviewer asks the API server's authorizer, through an
// authorization.k8s.io/v1 SubjectAccessReview, as upstream's csrapproving
// does: the grants are RBAC bindings (the default policy's
// myriad:node-autoapprove-* for default node tokens and for nodes), so
// whoever administers RBAC decides who may join.
type SubjectAccessReviewer struct {
	// Client creates the reviews; its identity needs "create" on
	// subjectaccessreviews (the certificate-controller role has it).
	Client kubernetes.Interface
}

var _ Authorizer = SubjectAccessReviewer{}

// Authorize implements Authorizer.
func (a SubjectAccessReviewer) Authorize(ctx context.Context, r *certificatesv1.CertificateSigningRequestSpec, subresource string) (bool, error) {
	var extra map[string]authorizationv1.ExtraValue
	if len(r.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(r.Extra))
		for k, v := range r.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: r.Username, UID: r.UID, Groups: r.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: subresource, Verb: "create",
		},
	}}
	res, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subjectaccessreview for %s: %w", subresource, err)
	}
	return res.Status.Allowed, nil
}
