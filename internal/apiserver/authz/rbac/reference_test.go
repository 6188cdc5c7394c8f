package rbac

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// reference is upstream's DefaultRuleResolver and RuleAllows, transcribed
// over plain lists: every binding looked at on every request. The index
// must decide as it does.
type reference struct {
	roles        []*rbacv1.Role
	clusterRoles []*rbacv1.ClusterRole
	rbs          []*rbacv1.RoleBinding
	crbs         []*rbacv1.ClusterRoleBinding
}

func (r *reference) roleRules(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, bool) {
	switch ref.Kind {
	case "Role":
		for _, x := range r.roles {
			if ns != "" && x.Namespace == ns && x.Name == ref.Name {
				return x.Rules, true
			}
		}
	case "ClusterRole":
		for _, x := range r.clusterRoles {
			if x.Name == ref.Name {
				return x.Rules, true
			}
		}
	}
	return nil, false
}

func refAppliesTo(u *request.User, subjects []rbacv1.Subject, ns string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return true
			}
		case rbacv1.ServiceAccountKind:
			saNS := ns
			if s.Namespace != "" {
				saNS = s.Namespace
			}
			if saNS != "" && u.Name == "system:serviceaccount:"+saNS+":"+s.Name {
				return true
			}
		}
	}
	return false
}

func (r *reference) rulesFor(u *request.User, ns string) (rules []rbacv1.PolicyRule, errs int) {
	for _, b := range r.crbs {
		if refAppliesTo(u, b.Subjects, "") {
			rr, ok := r.roleRules(b.RoleRef, "")
			if !ok {
				errs++
			}
			rules = append(rules, rr...)
		}
	}
	if ns != "" {
		for _, b := range r.rbs {
			if b.Namespace == ns && refAppliesTo(u, b.Subjects, ns) {
				rr, ok := r.roleRules(b.RoleRef, ns)
				if !ok {
					errs++
				}
				rules = append(rules, rr...)
			}
		}
	}
	return rules, errs
}

func refRuleAllows(a authz.Attributes, rule *rbacv1.PolicyRule) bool {
	verb := slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Verbs, a.Verb)
	if !a.IsResourceRequest {
		return verb && slices.ContainsFunc(rule.NonResourceURLs, func(u string) bool {
			return u == "*" || u == a.Path || (strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, strings.TrimRight(u, "*")))
		})
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	return verb &&
		(slices.Contains(rule.APIGroups, "*") || slices.Contains(rule.APIGroups, a.APIGroup)) &&
		upstreamResourceMatches(rule, combined, a.Subresource) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.Name))
}

// TestAgainstReference compares decisions and RulesFor with the reference
// over random policies drawn from a small vocabulary, so that wildcards,
// subresources, names, namespaces, ServiceAccounts and missing roles meet.
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	some := func(s ...string) []string {
		var out []string
		for range 1 + rng.IntN(2) {
			out = append(out, pick(s...))
		}
		return out
	}
	nss := []string{"ns0", "ns1"}
	randRule := func() rbacv1.PolicyRule {
		if rng.IntN(5) == 0 {
			return rbacv1.PolicyRule{Verbs: some("get", "post", "*"), NonResourceURLs: some("/healthz", "/healthz/*", "*", "/api", "/ap*")}
		}
		r := rbacv1.PolicyRule{Verbs: some("get", "list", "update", "*", "escalate"), APIGroups: some("", "apps", "*"), Resources: some("pods", "pods/log", "*/status", "*", "deployments", "pods/status")}
		if rng.IntN(4) == 0 {
			r.ResourceNames = some("n0", "n1")
		}
		return r
	}
	randRules := func() []rbacv1.PolicyRule {
		var rules []rbacv1.PolicyRule
		for range rng.IntN(5) {
			rules = append(rules, randRule())
		}
		return rules
	}
	randSubjects := func() []rbacv1.Subject {
		var out []rbacv1.Subject
		for range 1 + rng.IntN(2) {
			switch rng.IntN(3) {
			case 0:
				out = append(out, userSubj(pick("u0", "u1", "system:serviceaccount:ns0:sa")))
			case 1:
				out = append(out, groupSubj(pick("g0", "g1", "system:serviceaccounts")))
			default:
				out = append(out, saSubj(pick("", "ns0", "ns1"), pick("sa", "sb")))
			}
		}
		return out
	}
	users := []*request.User{
		{Name: "u0", Groups: []string{"g0"}},
		{Name: "u1", Groups: []string{"g0", "g1"}},
		{Name: "u2"},
		{Name: "system:serviceaccount:ns0:sa", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns0"}},
		{Name: "system:serviceaccount:ns1:sb", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"}},
	}
	var allowed, refused int
	for round := range 200 {
		ref := &reference{}
		var objs []runtime.Object
		for i := range 3 {
			cr := clusterRole(fmt.Sprintf("c%d", i), randRules()...)
			ref.clusterRoles = append(ref.clusterRoles, cr)
			objs = append(objs, cr)
			ro := role(pick(nss...), fmt.Sprintf("r%d", i), randRules()...)
			ref.roles = append(ref.roles, ro)
			objs = append(objs, ro)
		}
		for i := range 8 {
			// c3 and r3 do not exist.
			c := crb(fmt.Sprintf("b%d", i), pick("ClusterRole", "ClusterRole", "Role"), fmt.Sprintf("%s%d", pick("c", "r"), rng.IntN(4)), randSubjects()...)
			ref.crbs = append(ref.crbs, c)
			objs = append(objs, c)
			r := rb(pick(nss...), fmt.Sprintf("b%d", i), pick("ClusterRole", "Role"), fmt.Sprintf("%s%d", pick("c", "r"), rng.IntN(4)), randSubjects()...)
			ref.rbs = append(ref.rbs, r)
			objs = append(objs, r)
		}
		a := fed(t, objs...)
		for range 50 {
			u := users[rng.IntN(len(users))]
			ns := pick("", "ns0", "ns1")
			var attrs authz.Attributes
			if rng.IntN(5) == 0 {
				ns = ""
				attrs = nonRes(u, pick("get", "post"), pick("/healthz", "/healthz/etcd", "/api", "/apis", "/metrics"))
			} else {
				attrs = res(u, pick("get", "list", "update", "escalate", "*"), pick("", "apps"), pick("pods", "deployments", "*"), pick("", "", "log", "status"), ns, pick("", "n0", "n1"))
			}
			rules, errs := ref.rulesFor(u, ns)
			want := slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return refRuleAllows(attrs, &r) })
			d, reason, _ := a.Authorize(context.Background(), attrs)
			if want {
				allowed++
			} else {
				refused++
			}
			if got := d == authz.DecisionAllow; got != want {
				t.Fatalf("round %d: %+v with user %+v: allowed %v, reference %v (reason %q)", round, attrs, *u, got, want, reason)
			}
			if !want && (errs > 0) != (reason != "") {
				t.Fatalf("round %d: %+v: %d resolution errors but reason %q", round, attrs, errs, reason)
			}
			resource, nonResource, incomplete, _ := a.RulesFor(context.Background(), u, ns)
			var wantRes, wantNonRes int
			for _, r := range rules {
				if len(r.Resources) > 0 {
					wantRes++
				}
				if len(r.NonResourceURLs) > 0 {
					wantNonRes++
				}
			}
			if len(resource) != wantRes || len(nonResource) != wantNonRes || incomplete != (errs > 0) {
				t.Fatalf("round %d: RulesFor(%s, %q): %d/%d rules incomplete %v, reference %d/%d with %d errors", round, u.Name, ns, len(resource), len(nonResource), incomplete, wantRes, wantNonRes, errs)
			}
		}
	}
	// The vocabulary is small enough that both outcomes are common.
	if allowed < 1000 || refused < 1000 {
		t.Fatalf("%d allowed, %d refused: the random policies test too little", allowed, refused)
	}
}
