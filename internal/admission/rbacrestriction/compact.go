package rbacrestriction

import (
	"fmt"
	"reflect"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The helpers below reproduce what upstream's escalation message is made
// of (pkg/registry/rbac/validation/policy_compact.go and
// pkg/apis/rbac/v1/evaluation_helpers.go CompactString), so the message
// reads as upstream's.

type simpleResource struct {
	group, resource   string
	resourceNameExist bool
	resourceName      string
}

// compactRules merges rules naming one API group and one resource (and at
// most one name) that differ only by verb, as Covers' missing list is one
// rule per verb.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	compacted := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, rule := range rules {
		if res, ok := isSimpleResourceRule(&rule); ok {
			if existing, ok := simple[res]; ok {
				if existing.Verbs == nil {
					existing.Verbs = []string{}
				}
				existing.Verbs = append(existing.Verbs, rule.Verbs...)
			} else {
				simple[res] = rule.DeepCopy()
				order = append(order, res)
			}
			continue
		}
		compacted = append(compacted, rule)
	}
	for _, res := range order {
		compacted = append(compacted, *simple[res])
	}
	return compacted
}

func isSimpleResourceRule(rule *rbacv1.PolicyRule) (simpleResource, bool) {
	if len(rule.ResourceNames) > 1 || len(rule.NonResourceURLs) > 0 {
		return simpleResource{}, false
	}
	if len(rule.APIGroups) != 1 || len(rule.Resources) != 1 {
		return simpleResource{}, false
	}
	simpleRule := &rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: rule.Resources, Verbs: rule.Verbs, ResourceNames: rule.ResourceNames}
	if !reflect.DeepEqual(simpleRule, rule) {
		return simpleResource{}, false
	}
	res := simpleResource{group: rule.APIGroups[0], resource: rule.Resources[0]}
	if len(rule.ResourceNames) > 0 {
		res.resourceNameExist, res.resourceName = true, rule.ResourceNames[0]
	}
	return res, true
}

// compactString is upstream's CompactString: the rule's non-empty fields,
// e.g. {APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
