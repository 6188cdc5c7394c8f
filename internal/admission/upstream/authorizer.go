package upstream

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Authorizer is Myriad's authorizer as upstream's, for the CEL
// `authorizer` variable of match conditions and policies. get returns
// the server's authorizer at the time of the call (it is set after the
// admission chain is built); with none, every check has no opinion.
func Authorizer(get func() authz.Authorizer) authorizer.UnconditionalAuthorizer {
	return authorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		az := get()
		if az == nil {
			return authorizer.DecisionNoOpinion, "no authorizer", nil
		}
		var u *request.User
		if ui := a.GetUser(); ui != nil {
			u = &request.User{Name: ui.GetName(), UID: ui.GetUID(), Groups: ui.GetGroups(), Extra: ui.GetExtra()}
		}
		d, reason, err := az.Authorize(ctx, authz.Attributes{
			User: u, Verb: a.GetVerb(), IsResourceRequest: a.IsResourceRequest(),
			Namespace: a.GetNamespace(), APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(),
			Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(), Path: a.GetPath(),
		})
		switch d {
		case authz.DecisionAllow:
			return authorizer.DecisionAllow, reason, err
		case authz.DecisionDeny:
			return authorizer.DecisionDeny, reason, err
		}
		return authorizer.DecisionNoOpinion, reason, err
	})
}

type authorizerFunc func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error)

func (f authorizerFunc) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return f(ctx, a)
}
