package rbac

import (
	"strings"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// upstreamResourceMatches is upstream's ResourceMatches, verbatim, which
// builds "resource/subresource"; resourceMatches must agree with it.
func upstreamResourceMatches(rule *rbacv1.PolicyRule, combinedRequestedResource, requestedSubresource string) bool {
	for _, ruleResource := range rule.Resources {
		if ruleResource == rbacv1.ResourceAll {
			return true
		}
		if ruleResource == combinedRequestedResource {
			return true
		}
		if len(requestedSubresource) == 0 {
			continue
		}
		if len(ruleResource) == len(requestedSubresource)+2 &&
			strings.HasPrefix(ruleResource, "*/") &&
			strings.HasSuffix(ruleResource, requestedSubresource) {
			return true
		}
	}
	return false
}

func FuzzResourceMatches(f *testing.F) {
	for _, s := range [][3]string{
		{"pods", "pods", ""}, {"pods/log", "pods", "log"}, {"*/log", "pods", "log"}, {"*", "x", "y"},
		{"pods/log", "pods/log", ""}, {"pods", "pods", "log"}, {"*/", "pods", ""}, {"a/b/c", "a", "b/c"}, {"a/b/c", "a/b", "c"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, ruleResource, resource, subresource string) {
		rule := &rbacv1.PolicyRule{Resources: []string{ruleResource}}
		combined := resource
		if subresource != "" {
			combined = resource + "/" + subresource
		}
		if got, want := resourceMatches(rule, resource, subresource), upstreamResourceMatches(rule, combined, subresource); got != want {
			t.Fatalf("rule %q resource %q subresource %q: got %v, upstream %v", ruleResource, resource, subresource, got, want)
		}
	})
}

// TestConcurrentUpdates runs decisions against index updates (go test
// -race checks the locking).
func TestConcurrentUpdates(t *testing.T) {
	a := fed(t, clusterRole("r", rule(l("get"), l(""), l("pods"))))
	u := &request.User{Name: "u", Groups: []string{"g"}}
	attrs := res(u, "get", "", "pods", "", "ns", "p")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				a.Authorize(t.Context(), attrs)
				a.RulesFor(t.Context(), u, "ns")
			}
		}
	}()
	for range 2000 {
		add(a.index, crb("b", "ClusterRole", "r", groupSubj("g")))
		add(a.index, rb("ns", "b", "ClusterRole", "r", userSubj("u")))
		add(a.index, clusterRole("r", rule(l("get", "list"), l(""), l("pods"))))
		bindingHandler(a.index, clusterRoleBindingEntry).OnDelete(crb("b", "ClusterRole", "r"))
	}
	close(stop)
	wg.Wait()
	if d, _, _ := a.Authorize(t.Context(), attrs); d != authz.DecisionAllow {
		t.Fatal("the RoleBinding should still allow")
	}
}
