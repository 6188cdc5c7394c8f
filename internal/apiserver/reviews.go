package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// This file serves the review APIs of authentication.k8s.io and
// authorization.k8s.io: TokenReview, SelfSubjectReview, SubjectAccessReview,
// SelfSubjectAccessReview, LocalSubjectAccessReview and
// SelfSubjectRulesReview. Each is a question POSTed to the collection and
// answered in the returned object's status; nothing is stored, and only
// create is served (upstream's pkg/registry/authentication and
// pkg/registry/authorization).
//
// The answers come from the same authorizer and token authenticator that
// guard requests, so `kubectl auth can-i` says exactly what the filter
// chain will do. They are given to the Server after New and before Start
// (SetAuthorization, SetTokenAuthenticator) because the RBAC and Node
// authorizers are built from the Server's own watch caches
// (ListerWatcher), which exist only once New has returned.
//
// Reviews skip admission: none of the server's plugins applies to them, and
// upstream's NamespaceLifecycle exempts LocalSubjectAccessReview so that
// one may ask about a namespace that does not exist yet.

// reviewers is what the review APIs consult; set before Start, read-only
// after.
type reviewers struct {
	authorizer authz.Authorizer
	rules      authz.RuleResolver
	tokens     authn.TokenAuthenticator
}

// errStarted is returned by the setters once the Server has started.
var errStarted = errors.New("apiserver: must be set before Start")

// SetAuthorization gives the Server the authorizer that answers
// SubjectAccessReviews (of all three kinds) and the rule resolver that
// answers SelfSubjectRulesReviews. They must be the ones the filter chain
// authorizes with. rules may be nil, in which case a rules review reports
// an incomplete, empty list. Call it after New and before Start; it
// fails afterwards.
func (s *Server) SetAuthorization(az authz.Authorizer, rules authz.RuleResolver) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started {
		return errStarted
	}
	s.reviewers.authorizer, s.reviewers.rules = az, rules
	return nil
}

// SetTokenAuthenticator gives the Server the token authenticator that
// answers TokenReviews: the one bearer tokens are authenticated with.
// Without one a TokenReview answers "not authenticated", as upstream's
// does with no token authenticator configured. Call it after New and
// before Start; it fails afterwards.
func (s *Server) SetTokenAuthenticator(tokens authn.TokenAuthenticator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started {
		return errStarted
	}
	s.reviewers.tokens = tokens
	return nil
}

// reviewHooks serves a review resource: create only, at the collection.
func (s *Server) reviewHooks(h *resourceHandler, answer func(ctx context.Context, obj runtime.Object) (runtime.Object, error)) {
	h.hooks.serve = func(s *Server, w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
		// Upstream registers create at the collection only, and for a
		// namespaced review only under a namespace.
		if info.Name != "" || (h.res.Namespaced && info.Namespace == "") {
			s.writeError(w, r, errNoRoute())
			return
		}
		obj, ok := s.subresourceBody(w, r, h, info, request.VerbCreate, h.res.GroupVersionKind(), h.res.New())
		if !ok {
			return
		}
		// The object's namespace defaults to the request's and must not
		// contradict it; a cluster-scoped review's is cleared (upstream's
		// EnsureObjectNamespaceMatchesRequestNamespace).
		meta := obj.(metav1.Object)
		reqNS := ""
		if h.res.Namespaced {
			reqNS = info.Namespace
		}
		switch objNS := meta.GetNamespace(); {
		case objNS == reqNS:
		case objNS == "" || reqNS == "":
			meta.SetNamespace(reqNS)
		default:
			s.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
		if errs := h.res.Strategy.Validate(r.Context(), obj); len(errs) > 0 {
			s.writeError(w, r, apierrors.NewInvalid(h.res.GroupVersionKind().GroupKind(), "", errs))
			return
		}
		out, err := answer(r.Context(), obj)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.GetObjectKind().SetGroupVersionKind(h.res.GroupVersionKind())
		h.respond(w, r, http.StatusCreated, out)
	}
}

// installReviewHooks attaches the review handlers to their resources.
func (s *Server) installReviewHooks() {
	answers := map[string]func(context.Context, runtime.Object) (runtime.Object, error){
		"tokenreviews":              s.tokenReview,
		"selfsubjectreviews":        s.selfSubjectReview,
		"subjectaccessreviews":      s.subjectAccessReview,
		"selfsubjectaccessreviews":  s.selfSubjectAccessReview,
		"localsubjectaccessreviews": s.localSubjectAccessReview,
		"selfsubjectrulesreviews":   s.selfSubjectRulesReview,
	}
	for gvr, h := range s.handlers {
		if gvr.Group != authenticationv1.GroupName && gvr.Group != authorizationv1.GroupName {
			continue
		}
		if answer, ok := answers[gvr.Resource]; ok {
			s.reviewHooks(h, answer)
		}
	}
}

// tokenReview authenticates spec.token for spec.audiences.
func (s *Server) tokenReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	tr := obj.(*authenticationv1.TokenReview)
	if tr.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	tokens := s.reviewers.tokens
	if tokens == nil {
		return tr, nil
	}
	// nil audiences ask about the server's own, as the bearer-token filter
	// does.
	auds := tr.Spec.Audiences
	resp, ok, err := tokens.AuthenticateToken(ctx, tr.Spec.Token, auds)
	tr.Status.Authenticated = ok
	if !ok && err == nil {
		// No authenticator knows the token: what the bearer-token filter
		// would refuse it with.
		err = authn.ErrInvalidToken
	}
	if err != nil {
		tr.Status.Error = err.Error()
	}
	if !ok || resp == nil || resp.User == nil {
		return tr, nil
	}
	respAuds := resp.Audiences
	if len(auds) > 0 {
		if len(respAuds) == 0 {
			// An audience-agnostic token (a static token) is valid for
			// whatever was asked, as upstream's WrapAudienceAgnosticToken.
			respAuds = auds
		} else if !intersects(auds, respAuds) {
			// The authenticator accepted a token for none of the asked
			// audiences: a bug in it, not the caller's fault (upstream: 500).
			s.log.ErrorContext(ctx, "token authenticator returned no requested audience", "want", auds, "got", respAuds)
			return nil, apierrors.NewInternalError(errors.New("error validating audiences"))
		}
	}
	u := withAuthenticated(resp.User)
	tr.Status.User = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: map[string]authenticationv1.ExtraValue{}}
	for k, v := range u.Extra {
		tr.Status.User.Extra[k] = v
	}
	tr.Status.Audiences = respAuds
	return tr, nil
}

// withAuthenticated adds system:authenticated, which every user the
// bearer-token filter accepts carries, so a review reports the same
// groups the request would have.
func withAuthenticated(u *request.User) *request.User {
	if u.InGroup(request.GroupAuthenticated) {
		return u
	}
	out := *u
	out.Groups = append(append(make([]string, 0, len(u.Groups)+1), u.Groups...), request.GroupAuthenticated)
	return &out
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// selfSubjectReview reports the caller's identity (kubectl auth whoami).
func (s *Server) selfSubjectReview(ctx context.Context, _ runtime.Object) (runtime.Object, error) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	out := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(s.clock.Now())},
		Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: u.Name, UID: u.UID, Groups: u.Groups,
			Extra: make(map[string]authenticationv1.ExtraValue, len(u.Extra)),
		}},
	}
	for k, v := range u.Extra {
		out.Status.UserInfo.Extra[k] = v
	}
	return out, nil
}

func (s *Server) subjectAccessReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	sar := obj.(*authorizationv1.SubjectAccessReview)
	status, err := s.evaluate(ctx, subjectOf(sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	sar.Status = status
	return sar, err
}

func (s *Server) localSubjectAccessReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	sar := obj.(*authorizationv1.LocalSubjectAccessReview)
	status, err := s.evaluate(ctx, subjectOf(sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	sar.Status = status
	return sar, err
}

func (s *Server) selfSubjectAccessReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	sar := obj.(*authorizationv1.SelfSubjectAccessReview)
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	status, err := s.evaluate(ctx, u, sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	sar.Status = status
	return sar, err
}

// subjectOf is the user a SubjectAccessReview asks about.
func subjectOf(spec authorizationv1.SubjectAccessReviewSpec) *request.User {
	u := &request.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if spec.Extra != nil {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// evaluate asks the authorizer about user doing what ra or nra describe
// (validation has ensured exactly one is set). An authorizer's error is
// the review's evaluationError, not a failed request: the caller learns
// the decision and why it may be unreliable, as upstream.
func (s *Server) evaluate(ctx context.Context, user *request.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	az := s.reviewers.authorizer
	if az == nil {
		return authorizationv1.SubjectAccessReviewStatus{}, apierrors.NewServiceUnavailable("no authorizer is configured to answer access reviews")
	}
	attrs, notes := reviewAttributes(user, ra, nra)
	decision, reason, err := az.Authorize(ctx, attrs)
	var evalErrs []string
	if err != nil {
		evalErrs = append(evalErrs, err.Error())
	}
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authz.DecisionAllow,
		Denied:          decision == authz.DecisionDeny,
		Reason:          reason,
		EvaluationError: strings.Join(append(evalErrs, notes...), "; "),
	}, nil
}

// reviewAttributes turns a review's attributes into authz.Attributes, as
// upstream's authorization util. An empty version matches every version
// ("*"). Selectors are parsed only to report, as upstream does, that a
// malformed one was ignored: Myriad's authorizers do not decide on
// selectors, so ignoring one only ever broadens the question asked.
func reviewAttributes(user *request.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) (authz.Attributes, []string) {
	if ra == nil {
		return authz.Attributes{User: user, Verb: nra.Verb, Path: nra.Path}, nil
	}
	version := ra.Version
	if version == "" {
		version = "*"
	}
	attrs := authz.Attributes{
		User: user, Verb: ra.Verb, IsResourceRequest: true,
		Namespace: ra.Namespace, APIGroup: ra.Group, APIVersion: version,
		Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
	}
	var notes []string
	if partial, err := fieldSelectorParse(ra.FieldSelector); err != nil {
		notes = append(notes, selectorNote("fieldSelector", partial))
	}
	if partial, err := labelSelectorParse(ra.LabelSelector); err != nil {
		notes = append(notes, selectorNote("labelSelector", partial))
	}
	return attrs, notes
}

func selectorNote(which string, partial bool) string {
	if partial {
		return fmt.Sprintf("spec.resourceAttributes.%s partially ignored due to parse error", which)
	}
	return fmt.Sprintf("spec.resourceAttributes.%s ignored due to parse error", which)
}

// fieldSelectorParse reports whether sel fails to parse, and if so whether
// some of it was usable (upstream's fieldSelectorAsSelector rules).
func fieldSelectorParse(sel *authorizationv1.FieldSelectorAttributes) (partial bool, err error) {
	if sel == nil {
		return false, nil
	}
	if sel.RawSelector != "" {
		_, err := fields.ParseSelector(sel.RawSelector)
		return false, err
	}
	good := 0
	for _, req := range sel.Requirements {
		switch {
		case len(req.Values) != 1:
			err = errors.New("fieldSelectors need exactly one value")
		case req.Operator != metav1.FieldSelectorOpIn && req.Operator != metav1.FieldSelectorOpNotIn:
			err = fmt.Errorf("fieldSelectors do not support %v", req.Operator)
		default:
			good++
		}
	}
	return good > 0, err
}

// labelSelectorParse is fieldSelectorParse for label selectors.
func labelSelectorParse(sel *authorizationv1.LabelSelectorAttributes) (partial bool, err error) {
	if sel == nil {
		return false, nil
	}
	if sel.RawSelector != "" {
		_, err := labels.Parse(sel.RawSelector)
		return false, err
	}
	good := 0
	for _, req := range sel.Requirements {
		if _, e := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req}}); e != nil {
			err = e
			continue
		}
		good++
	}
	return good > 0, err
}

// selfSubjectRulesReview lists what the caller may do in spec.namespace
// (kubectl auth can-i --list).
func (s *Server) selfSubjectRulesReview(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	srr := obj.(*authorizationv1.SelfSubjectRulesReview)
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if srr.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	out := &authorizationv1.SelfSubjectRulesReview{Spec: srr.Spec}
	rules := s.reviewers.rules
	if rules == nil {
		// Nothing can enumerate the authorizer's decisions.
		out.Status = authorizationv1.SubjectRulesReviewStatus{
			ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{},
			Incomplete: true,
		}
		return out, nil
	}
	res, nonRes, incomplete, err := rules.RulesFor(ctx, u, srr.Spec.Namespace)
	out.Status = authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    make([]authorizationv1.ResourceRule, len(res)),
		NonResourceRules: make([]authorizationv1.NonResourceRule, len(nonRes)),
		Incomplete:       incomplete,
	}
	for i, r := range res {
		out.Status.ResourceRules[i] = authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames}
	}
	for i, r := range nonRes {
		out.Status.NonResourceRules[i] = authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}
