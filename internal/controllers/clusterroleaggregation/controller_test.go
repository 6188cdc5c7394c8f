package clusterroleaggregation

import (
	"context"
	"log/slog"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

func aggregated(name string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, AggregationRule: &rbacv1.AggregationRule{}}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func labelled(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func get(res ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: res}
}

var (
	toView = map[string]string{"agg-view": "true"}
	toEdit = map[string]string{"agg-edit": "true"}
)

func TestAggregate(t *testing.T) {
	tests := []struct {
		name  string
		role  *rbacv1.ClusterRole
		roles []*rbacv1.ClusterRole
		want  []rbacv1.PolicyRule
	}{
		{"nothing selected", aggregated("view", toView), []*rbacv1.ClusterRole{labelled("other", nil, get("pods"))}, []rbacv1.PolicyRule{}},
		{"name order, duplicates once", aggregated("view", toView), []*rbacv1.ClusterRole{
			labelled("b", toView, get("secrets"), get("pods")),
			labelled("a", toView, get("pods")),
		}, []rbacv1.PolicyRule{get("pods"), get("secrets")}},
		{"selector order before name order", aggregated("edit", toEdit, toView), []*rbacv1.ClusterRole{
			labelled("a", toView, get("configmaps")),
			labelled("z", toEdit, get("pods")),
		}, []rbacv1.PolicyRule{get("pods"), get("configmaps")}},
		{"a role selecting itself adds nothing of its own", func() *rbacv1.ClusterRole {
			r := aggregated("self", toView)
			r.Labels, r.Rules = toView, []rbacv1.PolicyRule{get("stale")}
			return r
		}(), []*rbacv1.ClusterRole{labelled("a", toView, get("pods"))}, []rbacv1.PolicyRule{get("pods")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all := append([]*rbacv1.ClusterRole{tc.role}, tc.roles...)
			list := func(sel labels.Selector) ([]*rbacv1.ClusterRole, error) {
				var out []*rbacv1.ClusterRole
				for _, r := range all {
					if sel.Matches(labels.Set(r.Labels)) {
						out = append(out, r)
					}
				}
				return out, nil
			}
			got, err := Aggregate(tc.role, list)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) || len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAggregateBadSelector(t *testing.T) {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}},
	}}
	if _, err := Aggregate(r, func(labels.Selector) ([]*rbacv1.ClusterRole, error) { return nil, nil }); err == nil {
		t.Fatal("a malformed selector aggregated")
	}
}

// TestSync runs sync against a clientset and checks the role is written
// once with the union and not again when nothing changed.
func TestSync(t *testing.T) {
	objs := []runtime.Object{aggregated("view", toView), labelled("a", toView, get("pods")), labelled("b", toView, get("services"))}
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	cc := &controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()}
	c, err := New(cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.ShutDown)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	t.Cleanup(f.Shutdown)
	f.WaitForCacheSync(ctx.Done())

	if err := c.sync(ctx, "view"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	view, err := client.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []rbacv1.PolicyRule{get("pods"), get("services")}; !equality.Semantic.DeepEqual(view.Rules, want) {
		t.Fatalf("view rules %v, want %v", view.Rules, want)
	}
	if view.AggregationRule == nil {
		t.Fatal("apply dropped the aggregation rule")
	}

	// Once the informer has the written role, a sync writes nothing.
	for deadline := time.Now().Add(5 * time.Second); ; {
		r, _ := c.roles.Get("view")
		if r != nil && len(r.Rules) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("informer never saw the aggregated role")
		}
		time.Sleep(10 * time.Millisecond)
	}
	client.ClearActions()
	if err := c.sync(ctx, "view"); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("unchanged role written: %v", a)
		}
	}
	// A role that is not aggregated and one that is gone are no-ops.
	for _, name := range []string{"a", "missing"} {
		if err := c.sync(ctx, name); err != nil {
			t.Errorf("sync %s: %v", name, err)
		}
	}
}
