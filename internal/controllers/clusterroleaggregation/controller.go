package clusterroleaggregation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (kube-controller-manager's).
const Name = "clusterrole-aggregation"

// fieldManager owns the aggregated roles' rules (upstream's).
const fieldManager = "clusterrole-aggregation-controller"

// Descriptor registers the controller with the manager.
// Five workers, as kube-controller-manager runs it.
func Descriptor() controllerctx.Descriptor { return controllerctx.Describe(Name, 5, New) }

// Controller keeps aggregated ClusterRoles' rules current.
type Controller struct {
	reconcile.Base
	roles rbaclisters.ClusterRoleLister
}

// New registers the controller's handlers on the shared ClusterRole informer.
func New(c *controllerctx.Context) (*Controller, error) {
	inf := c.Informers.Rbac().V1().ClusterRoles()
	ctrl := &Controller{roles: inf.Lister()}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{inf.Informer().HasSynced}
	if err := reconcile.Watch(inf.Informer(), reconcile.All, ctrl.enqueueAggregated); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// enqueueAggregated queues every aggregated role on any change, as
// upstream does: a label added to or removed from any role may change
// what any selector selects, ClusterRoles are few, and keying per role
// lets a failed write be retried alone.
func (c *Controller) enqueueAggregated(any) {
	roles, err := c.roles.List(labels.Everything())
	if err != nil {
		c.Log.Error("listing clusterroles", "err", err)
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.Queue.Add(r.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := Aggregate(role, c.roles.List)
	if err != nil {
		return err
	}
	// Semantic equality: no rules and an empty list are the same.
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	apply := rbacv1ac.ClusterRole(name).WithRules(applyRules(rules)...)
	if _, err := c.Client.RbacV1().ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("applying aggregated rules to clusterrole %s: %w", name, err)
	}
	return nil
}

// Aggregate is role's aggregated rules: for each selector in order, the
// rules of the roles it selects (role itself excepted) in name order,
// each rule kept once. list lists the ClusterRoles matching a selector.
func Aggregate(role *rbacv1.ClusterRole, list func(labels.Selector) ([]*rbacv1.ClusterRole, error)) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %s: selector %d: %w", role.Name, i, err)
		}
		selected, err := list(sel)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(selected, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, s := range selected {
			if s.Name == role.Name {
				continue
			}
			for _, r := range s.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

func applyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, 0, len(rules))
	for _, r := range rules {
		a := rbacv1ac.PolicyRule()
		a.Verbs, a.APIGroups, a.Resources, a.ResourceNames, a.NonResourceURLs = r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs
		out = append(out, a)
	}
	return out
}
