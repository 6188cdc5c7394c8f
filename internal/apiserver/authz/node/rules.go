package node

import (
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/rbac/bootstrappolicy"
)

// rule is one PolicyRule of upstream's system:node role. Resources are
// "resource" or "resource/subresource" (the node rules use no wildcards).
type rule struct {
	verbs, groups, resources []string
}

// nodeRules are bootstrappolicy.NodeRules — upstream v1.34's, with its
// default feature gates — in the form staticRulesAllow reads: what a node
// may do beyond the resources the authorizer subdivides.
func nodeRules() []rule {
	policy := bootstrappolicy.NodeRules()
	out := make([]rule, len(policy))
	for i, r := range policy {
		out[i] = rule{verbs: r.Verbs, groups: r.APIGroups, resources: r.Resources}
	}
	return out
}

// staticRulesAllow reports whether a node rule covers a resource request,
// as RBAC's RulesAllow. The rules name no non-resource URLs.
func staticRulesAllow(rules []rule, a authz.Attributes) bool {
	if !a.IsResourceRequest {
		return false
	}
	for i := range rules {
		r := &rules[i]
		if has(r.verbs, a.Verb) && has(r.groups, a.APIGroup) && coversResource(r.resources, a.Resource, a.Subresource) {
			return true
		}
	}
	return false
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// coversResource matches "resource" or, for a subresource,
// "resource/subresource" (the node rules use no wildcards).
func coversResource(list []string, resource, sub string) bool {
	for _, x := range list {
		if sub == "" {
			if x == resource {
				return true
			}
			continue
		}
		if len(x) == len(resource)+1+len(sub) && x[:len(resource)] == resource && x[len(resource)] == '/' && x[len(resource)+1:] == sub {
			return true
		}
	}
	return false
}
