package node

import (
	"context"
	"testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// FuzzAuthorize: no request attributes make the authorizer panic, allow
// a non-node, or allow a node a secret no pod of its references.
func FuzzAuthorize(f *testing.F) {
	fx := newFixture(f)
	fx.addPod(f, pod("ns", "p", "a", withSecretVolume("s")))
	f.Add("system:node:a", "get", "", "secrets", "", "ns", "s", "")
	f.Add("system:node:a", "list", "", "pods", "", "", "", "spec.nodeName=a")
	f.Add("system:node:a", "watch", "resource.k8s.io", "resourceslices", "", "", "", "spec.nodeName=a,x!=y")
	f.Add("system:node:", "get", "", "nodes", "", "", "a", "")
	f.Add("alice", "get", "", "secrets", "", "ns", "s", "")
	f.Add("system:node:b", "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "b", "")
	f.Fuzz(func(t *testing.T, user, verb, group, resource, sub, ns, name, selector string) {
		u := &request.User{Name: user, Groups: []string{NodesGroup}}
		at := authz.Attributes{User: u, Verb: verb, IsResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, FieldSelector: selector}
		d, _, err := fx.a.Authorize(context.Background(), at)
		if err != nil {
			t.Fatalf("error on a synced graph: %v", err)
		}
		nodeName, isNode := Identity(u)
		if !isNode && d != authz.DecisionNoOpinion {
			t.Fatalf("non-node %q got %v", user, d)
		}
		if d == authz.DecisionAllow && group == "" && resource == "secrets" && !(nodeName == "a" && ns == "ns" && name == "s") {
			t.Fatalf("%+v allowed a secret it has no pod for", at)
		}
	})
}
