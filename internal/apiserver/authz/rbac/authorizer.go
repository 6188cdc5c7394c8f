package rbac

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ListerWatcherFunc gives the ListerWatcher of a served resource, as
// apiserver.Server.ListerWatcher does.
type ListerWatcherFunc func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error)

// The resources the authorizer watches.
var (
	rolesGVR               = rbacv1.SchemeGroupVersion.WithResource("roles")
	roleBindingsGVR        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	clusterRolesGVR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	clusterRoleBindingsGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
)

// Options configure an Authorizer.
type Options struct {
	// Logger receives the informers' logs, watch errors among them
	// (default slog.Default()).
	Logger *slog.Logger
}

// Authorizer is the RBAC authz.Authorizer and authz.RuleResolver. Its
// methods are safe for concurrent use; until HasSynced it decides on what
// it has seen so far, so the server must not be ready before then.
type Authorizer struct {
	lw    ListerWatcherFunc
	log   *slog.Logger
	index *index

	mu struct {
		sync.Mutex
		started     bool
		controllers []cache.Controller
		cancel      context.CancelFunc
	}
	wg sync.WaitGroup
}

var (
	_ authz.Authorizer   = (*Authorizer)(nil)
	_ authz.RuleResolver = (*Authorizer)(nil)
)

// New builds an Authorizer that will watch the RBAC resources through lw.
// lw is not called until Start, so it may refer to a server built after
// the Authorizer (whose admission plugins need it).
func New(lw ListerWatcherFunc, opts Options) (*Authorizer, error) {
	if lw == nil {
		return nil, errors.New("rbac: a ListerWatcherFunc is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Authorizer{lw: lw, log: opts.Logger, index: newIndex()}, nil
}

// Start starts the informers that keep the index current; they run until
// ctx ends or Stop. It fails if a resource is not served. Start once.
func (a *Authorizer) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.started {
		return errors.New("rbac: authorizer already started")
	}
	type source struct {
		gvr     schema.GroupVersionResource
		obj     runtime.Object
		handler cache.ResourceEventHandler
	}
	sources := []source{
		{clusterRolesGVR, &rbacv1.ClusterRole{}, roleHandler(a.index, clusterRoleRules)},
		{rolesGVR, &rbacv1.Role{}, roleHandler(a.index, roleRules)},
		{clusterRoleBindingsGVR, &rbacv1.ClusterRoleBinding{}, bindingHandler(a.index, clusterRoleBindingEntry)},
		{roleBindingsGVR, &rbacv1.RoleBinding{}, bindingHandler(a.index, roleBindingEntry)},
	}
	logger := logr.FromSlogHandler(a.log.Handler())
	var controllers []cache.Controller
	for _, s := range sources {
		lw, err := a.lw(s.gvr)
		if err != nil {
			return fmt.Errorf("rbac: watching %s: %w", s.gvr.Resource, err)
		}
		_, c := cache.NewInformerWithOptions(cache.InformerOptions{
			Logger:        &logger,
			ListerWatcher: lw,
			ObjectType:    s.obj,
			Handler:       s.handler,
		})
		controllers = append(controllers, c)
	}
	ctx, cancel := context.WithCancel(ctx)
	a.mu.started, a.mu.controllers, a.mu.cancel = true, controllers, cancel
	for _, c := range controllers {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			c.RunWithContext(ctx)
		}()
	}
	return nil
}

// Stop stops the informers and waits for them. It is idempotent.
func (a *Authorizer) Stop() {
	a.mu.Lock()
	cancel := a.mu.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	a.wg.Wait()
}

// HasSynced reports whether the index holds every RBAC object the watch
// caches held when the informers started: the readiness check, so that a
// restarted server never refuses a request its bindings allow.
func (a *Authorizer) HasSynced() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.mu.started {
		return false
	}
	for _, c := range a.mu.controllers {
		if !c.HasSynced() {
			return false
		}
	}
	return true
}

// Authorize allows a request when a rule of a role bound to its user (or
// one of the user's groups, or its ServiceAccount) matches it, and has no
// opinion otherwise. Cluster-wide bindings are consulted first, then the
// request namespace's, as upstream. A binding to a missing role
// contributes nothing; the reason then names what could not be resolved.
func (a *Authorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	u := attrs.User
	if u == nil {
		return authz.DecisionNoOpinion, "", nil
	}
	x := a.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	var failed []failure
	if reason, ok := x.allowLocked(&attrs, "", &failed); ok {
		return authz.DecisionAllow, reason, nil
	}
	if attrs.Namespace != "" {
		if reason, ok := x.allowLocked(&attrs, attrs.Namespace, &failed); ok {
			return authz.DecisionAllow, reason, nil
		}
	}
	if len(failed) == 0 {
		return authz.DecisionNoOpinion, "", nil
	}
	return authz.DecisionNoOpinion, fmt.Sprintf("RBAC: %v", failuresError(failed)), nil
}

// failure is a binding whose role could not be resolved.
type failure struct {
	b   *binding
	err error
}

// failuresError aggregates failures as upstream's visitor does.
func failuresError(failed []failure) error {
	errs := make([]error, len(failed))
	for i, f := range failed {
		errs[i] = f.err
	}
	return utilerrors.NewAggregate(errs)
}

// allowLocked looks for a rule allowing a among the bindings in namespace
// ("" for cluster-wide) naming a's user or one of its groups, and returns
// the allow reason. Roles that cannot be resolved are added to failed,
// once per binding.
func (x *index) allowLocked(a *authz.Attributes, namespace string, failed *[]failure) (string, bool) {
	u := a.User
	bit := verbBit(a.Verb)
	if reason, ok := x.allowForLocked(a, bit, subjectKey{namespace, userSubject, u.Name}, failed); ok {
		return reason, true
	}
	for _, g := range u.Groups {
		if reason, ok := x.allowForLocked(a, bit, subjectKey{namespace, groupSubject, g}, failed); ok {
			return reason, true
		}
	}
	return "", false
}

func (x *index) allowForLocked(a *authz.Attributes, bit uint16, k subjectKey, failed *[]failure) (string, bool) {
	for _, b := range x.bySubject[k] {
		role, err := x.roleRulesLocked(b)
		if err != nil {
			if !slices.ContainsFunc(*failed, func(f failure) bool { return f.b == b }) {
				*failed = append(*failed, failure{b, err})
			}
			continue
		}
		if role.allows(a, bit) {
			return b.reasons[b.firstSubject(a.User)], true
		}
	}
	return "", false
}

// firstSubject is the index of the first of b's subjects that applies to
// u, which upstream's allow reason names.
func (b *binding) firstSubject(u *request.User) int {
	for i := range b.subjects {
		s := &b.subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == u.Name {
				return i
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return i
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = b.namespace
			}
			if ns != "" && isServiceAccount(u.Name, ns, s.Name) {
				return i
			}
		}
	}
	return 0
}

// RulesFor lists the rules of every role bound to user cluster-wide and,
// when namespace is set, in namespace, as upstream's RBAC RulesFor: a rule
// with both resources and non-resource URLs appears in both lists.
// Bindings whose role cannot be resolved are left out and reported in err,
// with incomplete set.
func (a *Authorizer) RulesFor(_ context.Context, user *request.User, namespace string) ([]authz.ResourceRule, []authz.NonResourceRule, bool, error) {
	if user == nil {
		return nil, nil, false, nil
	}
	x := a.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	var (
		resource    []authz.ResourceRule
		nonResource []authz.NonResourceRule
		failed      []failure
	)
	scopes := []string{""}
	if namespace != "" {
		scopes = append(scopes, namespace)
	}
	for _, ns := range scopes {
		for _, b := range x.bindingsForLocked(user, ns) {
			role, err := x.roleRulesLocked(b)
			if err != nil {
				failed = append(failed, failure{b, err})
				continue
			}
			for _, r := range role.rules {
				if len(r.Resources) > 0 {
					resource = append(resource, authz.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
				}
				if len(r.NonResourceURLs) > 0 {
					nonResource = append(nonResource, authz.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
				}
			}
		}
	}
	if len(failed) > 0 {
		return resource, nonResource, true, failuresError(failed)
	}
	return resource, nonResource, false, nil
}

// bindingsForLocked lists the distinct bindings in namespace naming user
// or its groups, by name, so RulesFor answers in a stable order.
func (x *index) bindingsForLocked(user *request.User, namespace string) []*binding {
	out := slices.Clone(x.bySubject[subjectKey{namespace, userSubject, user.Name}])
	seen := make(map[*binding]bool, len(out))
	for _, b := range out {
		seen[b] = true
	}
	for _, g := range user.Groups {
		for _, b := range x.bySubject[subjectKey{namespace, groupSubject, g}] {
			if !seen[b] {
				seen[b] = true
				out = append(out, b)
			}
		}
	}
	slices.SortFunc(out, func(a, b *binding) int { return strings.Compare(a.name, b.name) })
	return out
}

// isServiceAccount reports whether user is "system:serviceaccount:ns:name",
// without building that string (upstream's serviceaccount.MatchesUsername).
func isServiceAccount(user, ns, name string) bool {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ns)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ":")
	return ok && rest == name
}
