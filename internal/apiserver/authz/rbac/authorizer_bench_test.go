package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// benchAuthorizer holds a cluster of the size: 1,000 ClusterRoles
// of 8 rules, 10,000 ServiceAccounts (10 in each of 1,000 namespaces) each
// with a RoleBinding, 10,000 users each with a ClusterRoleBinding, a
// system:node-like ClusterRole of 30 rules bound to group system:nodes,
// and the three ClusterRoleBindings every authenticated user has.
func benchAuthorizer(b *testing.B) *Authorizer {
	a := fed(b)
	x := a.index
	for i := range 1000 {
		rules := make([]rbacv1.PolicyRule, 0, 8)
		for j := range 7 {
			rules = append(rules, rule(l("get", "list", "watch"), l(fmt.Sprintf("group%d.io", j)), l(fmt.Sprintf("things%d", i))))
		}
		rules = append(rules, rule(l("create", "get", "list", "watch", "update", "patch", "delete"), l(""), l("pods", "pods/log", "configmaps", "secrets")))
		add(x, clusterRole(fmt.Sprintf("role-%d", i), rules...))
	}
	for i := range 10000 {
		ns := fmt.Sprintf("ns-%d", i/10)
		add(x, rb(ns, fmt.Sprintf("sa-%d", i%10), "ClusterRole", fmt.Sprintf("role-%d", i%1000), saSubj("", fmt.Sprintf("sa-%d", i%10))))
		add(x, crb(fmt.Sprintf("user-%d", i), "ClusterRole", fmt.Sprintf("role-%d", i%1000), userSubj(fmt.Sprintf("user-%d", i))))
	}
	nodeRules := make([]rbacv1.PolicyRule, 0, 30)
	for j := range 29 {
		nodeRules = append(nodeRules, rule(l("get", "list", "watch"), l(""), l(fmt.Sprintf("nodethings%d", j))))
	}
	nodeRules = append(nodeRules, rule(l("create", "delete", "get", "patch", "update"), l("coordination.k8s.io"), l("leases")))
	add(x, clusterRole("system:node", nodeRules...))
	add(x, crb("system:node", "ClusterRole", "system:node", groupSubj("system:nodes")))
	add(x, clusterRole("system:basic-user", rule(l("create"), l("authorization.k8s.io"), l("selfsubjectaccessreviews", "selfsubjectrulesreviews"))))
	add(x, clusterRole("system:discovery", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")}))
	add(x, clusterRole("system:public-info-viewer", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz", "/livez", "/readyz", "/version", "/version/")}))
	for _, n := range []string{"system:basic-user", "system:discovery", "system:public-info-viewer"} {
		add(x, crb(n, "ClusterRole", n, groupSubj(request.GroupAuthenticated)))
	}
	return a
}

func BenchmarkAuthorize(b *testing.B) {
	a := benchAuthorizer(b)
	sa := &request.User{Name: "system:serviceaccount:ns-417:sa-3", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns-417", request.GroupAuthenticated}}
	node := &request.User{Name: "system:node:node-4242", Groups: []string{"system:nodes", request.GroupAuthenticated}}
	cases := []struct {
		name  string
		attrs authz.Attributes
		want  authz.Decision
	}{
		{"ServiceAccountCreatesPod", res(sa, "create", "", "pods", "", "ns-417", ""), authz.DecisionAllow},
		{"NodeUpdatesLease", res(node, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "node-4242"), authz.DecisionAllow},
		{"Denied", res(sa, "delete", "", "nodes", "", "", "node-1"), authz.DecisionNoOpinion},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			if d, _, _ := a.Authorize(ctx, c.attrs); d != c.want {
				b.Fatalf("decision %v, want %v", d, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				a.Authorize(ctx, c.attrs)
			}
		})
	}
}

// BenchmarkLoad is the cost of filing the benchmark cluster's 20,000
// bindings and 1,000 roles, as informers do at start.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchAuthorizer(b)
	}
}
