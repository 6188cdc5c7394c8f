package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
)

// The matchers below are upstream's pkg/apis/rbac/v1/evaluation_helpers.go
// and RuleAllows, written so that a request with a subresource is matched
// without building "resource/subresource": they run for every rule of every
// binding a request looks at.

// ruleAllowsVerbMatched is upstream's RuleAllows for a rule known to grant
// a's verb (compiledRole.allows checks verbs first).
func ruleAllowsVerbMatched(a *authz.Attributes, rule *rbacv1.PolicyRule) bool {
	if a.IsResourceRequest {
		return apiGroupMatches(rule, a.APIGroup) &&
			resourceMatches(rule, a.Resource, a.Subresource) &&
			resourceNameMatches(rule, a.Name)
	}
	return nonResourceURLMatches(rule, a.Path)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches matches "*", the resource itself (no subresource),
// "resource/subresource", and "*/subresource".
func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		if len(r) == len(resource)+1+len(subresource) && r[len(resource)] == '/' &&
			strings.HasPrefix(r, resource) && strings.HasSuffix(r, subresource) {
			return true
		}
		if len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// resourceNameMatches: a rule without resourceNames matches any name; one
// with resourceNames matches only those (so never a collection or create,
// whose name is empty).
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches matches "*", the path itself, and a prefix ending
// in "*" ("/healthz/*" matches "/healthz/etcd" and "/healthz/").
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
