package authz

import (
	"context"
	"errors"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// RuleResolverFunc adapts a function to RuleResolver.
type RuleResolverFunc func(ctx context.Context, user *request.User, namespace string) ([]ResourceRule, []NonResourceRule, bool, error)

// RulesFor calls f.
func (f RuleResolverFunc) RulesFor(ctx context.Context, user *request.User, namespace string) ([]ResourceRule, []NonResourceRule, bool, error) {
	return f(ctx, user, namespace)
}

// AlwaysAllowRules is what AlwaysAllow permits, as upstream's
// alwaysAllowAuthorizer reports it: every verb on every resource and
// every path, a complete list.
func AlwaysAllowRules() RuleResolver {
	return RuleResolverFunc(func(context.Context, *request.User, string) ([]ResourceRule, []NonResourceRule, bool, error) {
		return []ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			[]NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
	})
}

// NoRules is what AlwaysDeny permits: nothing, a complete list.
func NoRules() RuleResolver {
	return RuleResolverFunc(func(context.Context, *request.User, string) ([]ResourceRule, []NonResourceRule, bool, error) {
		return []ResourceRule{}, []NonResourceRule{}, false, nil
	})
}

// RuleResolverUnion lists the rules of every resolver, as upstream's
// union: the lists are concatenated, the result is incomplete if any is,
// and the errors are joined. (A Deny in an Authorizer Union ends the
// search, but a rule list cannot express a denial, so every resolver is
// asked.)
func RuleResolverUnion(resolvers ...RuleResolver) RuleResolver {
	return RuleResolverFunc(func(ctx context.Context, user *request.User, namespace string) ([]ResourceRule, []NonResourceRule, bool, error) {
		var (
			res        []ResourceRule
			nonRes     []NonResourceRule
			incomplete bool
			errs       []error
		)
		for _, r := range resolvers {
			rr, nr, inc, err := r.RulesFor(ctx, user, namespace)
			res = append(res, rr...)
			nonRes = append(nonRes, nr...)
			incomplete = incomplete || inc
			if err != nil {
				errs = append(errs, err)
			}
		}
		return res, nonRes, incomplete, errors.Join(errs...)
	})
}
