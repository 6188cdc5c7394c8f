package authz

import (
	"context"
	"errors"
	"strings"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Decision is an authorizer's verdict.
type Decision int

const (
	// DecisionDeny refuses the request outright; later authorizers in a
	// Union are not asked.
	DecisionDeny Decision = iota
	// DecisionAllow permits the request.
	DecisionAllow
	// DecisionNoOpinion leaves the decision to the next authorizer; if
	// none allows, the request is refused.
	DecisionNoOpinion
)

func (d Decision) String() string {
	switch d {
	case DecisionDeny:
		return "Deny"
	case DecisionAllow:
		return "Allow"
	case DecisionNoOpinion:
		return "NoOpinion"
	}
	return "Decision(?)"
}

// Attributes describe one request for authorization, as upstream's
// authorizer.Attributes. For resource requests the resource fields are set
// and Path is informational; for non-resource requests only Verb (the
// lower-cased HTTP method) and Path matter.
type Attributes struct {
	User *request.User

	// Verb is get, list, watch, create, update, patch, delete,
	// deletecollection, proxy — or an HTTP method for non-resource paths.
	Verb string

	IsResourceRequest bool
	Namespace         string
	APIGroup          string
	APIVersion        string
	Resource          string
	Subresource       string
	// Name is the object addressed; empty for collections (and for a
	// create, whose name is in the body).
	Name string
	// FieldSelector is a list's or watch's fieldSelector, unparsed.
	FieldSelector string

	// Path is the request path; what non-resource rules match on.
	Path string
}

// AttributesFrom builds Attributes for user's request described by info.
func AttributesFrom(user *request.User, info *request.RequestInfo) Attributes {
	return Attributes{
		User:              user,
		Verb:              info.Verb,
		IsResourceRequest: info.IsResourceRequest,
		Namespace:         info.Namespace,
		APIGroup:          info.APIGroup,
		APIVersion:        info.APIVersion,
		Resource:          info.Resource,
		Subresource:       info.Subresource,
		Name:              info.Name,
		FieldSelector:     info.FieldSelector,
		Path:              info.Path,
	}
}

// UserName is the user's name, or "" for a missing user.
func (a Attributes) UserName() string {
	if a.User == nil {
		return ""
	}
	return a.User.Name
}

// Authorizer decides on one request. reason is a short explanation for
// logs and for the 403 message (upstream appends it after a colon); it
// may be empty. An authorizer may return DecisionAllow together with an
// error (it allowed on a rule it could evaluate despite failing on
// another); an Allow always wins. Implementations must be safe for
// concurrent use and fast: they run on every request.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// AlwaysAllow permits everything: --authorization-mode=AlwaysAllow, and
// for tests.
func AlwaysAllow() Authorizer {
	return AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
		return DecisionAllow, "", nil
	})
}

// AlwaysDeny refuses everything.
func AlwaysDeny() Authorizer {
	return AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
		return DecisionDeny, "", nil
	})
}

// PrivilegedGroups allows every request from members of groups (upstream
// allows system:masters this way, ahead of RBAC) and has no opinion on
// anyone else.
func PrivilegedGroups(groups ...string) Authorizer {
	return AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
		for _, g := range groups {
			if a.User.InGroup(g) {
				return DecisionAllow, "", nil
			}
		}
		return DecisionNoOpinion, "", nil
	})
}

// Union asks each authorizer in order; the first Allow or Deny decides. If
// all have no opinion the result is NoOpinion, with their reasons and
// errors joined.
func Union(authorizers ...Authorizer) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, a Attributes) (Decision, string, error) {
		var reasons []string
		var errs []error
		for _, az := range authorizers {
			d, reason, err := az.Authorize(ctx, a)
			if err != nil {
				errs = append(errs, err)
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
			if d == DecisionAllow || d == DecisionDeny {
				return d, reason, err
			}
		}
		return DecisionNoOpinion, strings.Join(reasons, ", "), errors.Join(errs...)
	})
}

// ResourceRule is one rule of what a user may do with resources, as
// authorization.k8s.io/v1's ResourceRule (SelfSubjectRulesReview).
type ResourceRule struct {
	Verbs, APIGroups, Resources, ResourceNames []string
}

// NonResourceRule is one rule of what a user may do with non-resource
// paths, as authorization.k8s.io/v1's NonResourceRule.
type NonResourceRule struct {
	Verbs, NonResourceURLs []string
}

// RuleResolver lists what an authorizer would allow user in namespace
// (cluster-wide rules included), for SelfSubjectRulesReview and kubectl
// auth can-i --list. incomplete reports that the list may miss rules (an
// authorizer that cannot enumerate its decisions, an unresolvable role
// reference, reported in err as upstream's evaluationError).
type RuleResolver interface {
	RulesFor(ctx context.Context, user *request.User, namespace string) (resource []ResourceRule, nonResource []NonResourceRule, incomplete bool, err error)
}
