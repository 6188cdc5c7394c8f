package apiserver

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// tableRule allows (or, with deny, denies) subject — a user name or
// "group:<name>" — the verbs on a resource of a group in a namespace
// ("" any), or on a non-resource path.
type tableRule struct {
	subject, verb, group, resource, namespace, path string
	deny                                            bool
}

// ruleTable is the test's stand-in for RBAC, which is not on this branch:
// a plain list of rules that is both an Authorizer and a RuleResolver.
type ruleTable []tableRule

func (t ruleTable) subjectMatches(r tableRule, u *request.User) bool {
	if g, ok := strings.CutPrefix(r.subject, "group:"); ok {
		return u.InGroup(g)
	}
	return u.Name == r.subject
}

func (t ruleTable) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.User.Name == "broken" {
		return authz.DecisionNoOpinion, "", errors.New("rule store unavailable")
	}
	for _, r := range t {
		if !t.subjectMatches(r, a.User) || (r.verb != "*" && r.verb != a.Verb) {
			continue
		}
		if a.IsResourceRequest {
			if r.path != "" || r.group != a.APIGroup || r.resource != a.Resource || (r.namespace != "" && r.namespace != a.Namespace) {
				continue
			}
		} else if r.path != a.Path {
			continue
		}
		if r.deny {
			return authz.DecisionDeny, "denied by the rule table", nil
		}
		return authz.DecisionAllow, "allowed by the rule table", nil
	}
	return authz.DecisionNoOpinion, "", nil
}

func (t ruleTable) RulesFor(_ context.Context, u *request.User, ns string) ([]authz.ResourceRule, []authz.NonResourceRule, bool, error) {
	var res []authz.ResourceRule
	var nonRes []authz.NonResourceRule
	for _, r := range t {
		if r.deny || !t.subjectMatches(r, u) || (r.namespace != "" && r.namespace != ns) {
			continue
		}
		if r.path != "" {
			nonRes = append(nonRes, authz.NonResourceRule{Verbs: []string{r.verb}, NonResourceURLs: []string{r.path}})
		} else {
			res = append(res, authz.ResourceRule{Verbs: []string{r.verb}, APIGroups: []string{r.group}, Resources: []string{r.resource}})
		}
	}
	return res, nonRes, false, nil
}

// reviewRules: everyone authenticated may ask about themselves (as
// upstream's system:basic-user); alice may read pods in dev; reviewer may
// ask about others; mallory is denied secrets outright; the devs group
// may GET /healthz.
var reviewRules = ruleTable{
	{subject: "group:system:authenticated", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectaccessreviews"},
	{subject: "group:system:authenticated", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectrulesreviews"},
	{subject: "group:system:authenticated", verb: "create", group: "authentication.k8s.io", resource: "selfsubjectreviews"},
	{subject: "alice", verb: "get", resource: "pods", namespace: "dev"},
	{subject: "alice", verb: "list", resource: "pods", namespace: "dev"},
	{subject: "reviewer", verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"},
	{subject: "reviewer", verb: "create", group: "authorization.k8s.io", resource: "localsubjectaccessreviews"},
	{subject: "reviewer", verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
	{subject: "mallory", verb: "get", resource: "secrets", deny: true},
	{subject: "group:devs", verb: "get", path: "/healthz"},
}

// reviewEnv serves the Server behind real authentication (static bearer
// tokens plus tokens) and authorization (system:masters, then rules),
// the review APIs answering from the same authorizer.
type reviewEnv struct {
	*testEnv
	tokens authn.TokenAuthenticator
}

var reviewUsers = map[string]*request.User{
	"alice-token":    {Name: "alice", UID: "a-1", Groups: []string{"devs"}, Extra: map[string][]string{"team": {"blue"}}},
	"bob-token":      {Name: "bob"},
	"reviewer-token": {Name: "reviewer"},
	"broken-token":   {Name: "broken"},
}

func newReviewEnv(t testing.TB, rules authz.RuleResolver, extraTokens ...authn.TokenAuthenticator) *reviewEnv {
	t.Helper()
	tokens := authn.TokenUnion(append([]authn.TokenAuthenticator{authn.NewAdminToken("admin-token"), authn.NewStaticTokens(reviewUsers)}, extraTokens...)...)
	az := authz.Union(authz.PrivilegedGroups(request.GroupMasters), reviewRules)
	e := newEnv(t, func(e *testEnv) {
		e.token = "admin-token"
		e.beforeStart = func(s *Server) {
			if err := s.SetAuthorization(az, rules); err != nil {
				t.Fatal(err)
			}
			if err := s.SetTokenAuthenticator(tokens); err != nil {
				t.Fatal(err)
			}
		}
		e.wrap = func(h http.Handler) http.Handler {
			return filters.Chain(h, filters.WithRequestInfo,
				authn.WithAuthentication(authn.BearerToken(tokens), authn.Config{Logger: quietLogger()}),
				authz.WithAuthorization(az, quietLogger()))
		}
	})
	return &reviewEnv{testEnv: e, tokens: tokens}
}

// as is a clientset authenticating with token.
func (e *reviewEnv) as(token string) kubernetes.Interface {
	e.t.Helper()
	cfg := rest.CopyConfig(e.cfg)
	cfg.BearerToken = token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return cs
}

// wantInvalid checks err is a 422 naming exactly fields.
func wantInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var got []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		got = append(got, c.Field)
	}
	slices.Sort(got)
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Fatalf("invalid fields %v, want %v (%v)", got, fields, err)
	}
}

func TestSubjectAccessReview(t *testing.T) {
	e := newReviewEnv(t, reviewRules)
	ctx := context.Background()
	sars := e.as("reviewer-token").AuthorizationV1().SubjectAccessReviews()
	pods := func(ns, verb string) *authorizationv1.ResourceAttributes {
		return &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "pods"}
	}
	tests := []struct {
		name string
		spec authorizationv1.SubjectAccessReviewSpec
		want authorizationv1.SubjectAccessReviewStatus
	}{
		{"allowed", authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: pods("dev", "get")},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed by the rule table"}},
		{"other namespace", authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: pods("prod", "get")},
			authorizationv1.SubjectAccessReviewStatus{}},
		{"other verb", authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: pods("dev", "delete")},
			authorizationv1.SubjectAccessReviewStatus{}},
		{"masters by group alone", authorizationv1.SubjectAccessReviewSpec{Groups: []string{"system:masters"}, ResourceAttributes: pods("", "delete")},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true}},
		{"denied", authorizationv1.SubjectAccessReviewSpec{User: "mallory", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "x", Verb: "get", Resource: "secrets"}},
			authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "denied by the rule table"}},
		{"non-resource by group", authorizationv1.SubjectAccessReviewSpec{User: "carol", Groups: []string{"devs"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed by the rule table"}},
		{"authorizer error", authorizationv1.SubjectAccessReviewSpec{User: "broken", ResourceAttributes: pods("dev", "get")},
			authorizationv1.SubjectAccessReviewStatus{EvaluationError: "rule store unavailable"}},
		{"malformed selector ignored", authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "dev", Verb: "list", Resource: "pods", LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "a in in (b"}}},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed by the rule table", EvaluationError: "spec.resourceAttributes.labelSelector ignored due to parse error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sars.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: tt.spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want {
				t.Fatalf("status %+v, want %+v", got.Status, tt.want)
			}
			if got.Spec.User != tt.spec.User || got.Kind != "SubjectAccessReview" && got.Kind != "" {
				t.Fatalf("spec not echoed: %+v", got)
			}
		})
	}

	invalid := []struct {
		name   string
		sar    authorizationv1.SubjectAccessReview
		fields []string
	}{
		{"no attributes", authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice"}}, []string{"spec.resourceAttributes"}},
		{"both attributes", authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: pods("dev", "get"), NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}}},
			[]string{"spec.nonResourceAttributes"}},
		{"no subject", authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: pods("dev", "get")}}, []string{"spec.user"}},
		{"metadata", authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: pods("dev", "get")}}, []string{"metadata"}},
		{"selector both ways", authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
			FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "a=b", Requirements: []metav1.FieldSelectorRequirement{{Key: "a", Operator: metav1.FieldSelectorOpIn, Values: []string{"b"}}}}}}},
			[]string{"spec.resourceAttributes.fieldSelector.rawSelector"}},
		{"empty selector", authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
			LabelSelector: &authorizationv1.LabelSelectorAttributes{}}}},
			[]string{"spec.resourceAttributes.labelSelector.requirements"}},
	}
	for _, tt := range invalid {
		t.Run("invalid/"+tt.name, func(t *testing.T) {
			_, err := sars.Create(ctx, &tt.sar, metav1.CreateOptions{})
			wantInvalid(t, err, tt.fields...)
		})
	}

	t.Run("forbidden without create on subjectaccessreviews", func(t *testing.T) {
		_, err := e.as("bob-token").AuthorizationV1().SubjectAccessReviews().Create(ctx,
			&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: pods("dev", "get")}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "bob" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`) {
			t.Fatalf("want upstream's 403, got %v", err)
		}
	})
	t.Run("only create", func(t *testing.T) {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			path := "/apis/authorization.k8s.io/v1/subjectaccessreviews"
			if m != "GET" {
				path += "/x"
			}
			r := e.do(m, path, []byte(`{}`), "Authorization: Bearer admin-token")
			if r.code != http.StatusMethodNotAllowed && r.code != http.StatusNotFound {
				t.Errorf("%s %s: %d %s", m, path, r.code, r.body)
			}
		}
	})
	t.Run("protobuf", func(t *testing.T) {
		cfg := rest.CopyConfig(e.cfg)
		cfg.BearerToken = "reviewer-token"
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cs := kubernetes.NewForConfigOrDie(cfg)
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: pods("dev", "list")}}, metav1.CreateOptions{})
		if err != nil || !got.Status.Allowed {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
}

func TestSelfSubjectAccessReview(t *testing.T) {
	e := newReviewEnv(t, reviewRules)
	ctx := context.Background()
	ask := func(token string, spec authorizationv1.SelfSubjectAccessReviewSpec) (*authorizationv1.SelfSubjectAccessReview, error) {
		return e.as(token).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	}
	getPods := authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "dev", Verb: "get", Resource: "pods"}}
	for _, tt := range []struct {
		token   string
		allowed bool
	}{{"alice-token", true}, {"bob-token", false}, {"admin-token", true}} {
		got, err := ask(tt.token, getPods)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tt.allowed {
			t.Errorf("%s: allowed %v, want %v", tt.token, got.Status.Allowed, tt.allowed)
		}
	}
	_, err := ask("alice-token", authorizationv1.SelfSubjectAccessReviewSpec{})
	wantInvalid(t, err, "spec.resourceAttributes")
	_, err = ask("alice-token", authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: getPods.ResourceAttributes, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}})
	wantInvalid(t, err, "spec.nonResourceAttributes")
}

func TestLocalSubjectAccessReview(t *testing.T) {
	e := newReviewEnv(t, reviewRules)
	ctx := context.Background()
	lsars := e.as("reviewer-token").AuthorizationV1().LocalSubjectAccessReviews("dev")
	got, err := lsars.Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "dev", Verb: "list", Resource: "pods"}}}, metav1.CreateOptions{})
	if err != nil || !got.Status.Allowed || got.Namespace != "dev" {
		t.Fatalf("got %+v, %v", got, err)
	}
	_, err = lsars.Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "prod", Verb: "list", Resource: "pods"}}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.resourceAttributes.namespace")
	_, err = lsars.Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.nonResourceAttributes")
	_, err = lsars.Create(ctx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "prod"}, Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "prod", Verb: "list", Resource: "pods"}}}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "does not match the namespace sent on the request") {
		t.Fatalf("namespace mismatch: %v", err)
	}
	// A review about a namespace that does not exist is a fair question.
	if _, err := e.as("reviewer-token").AuthorizationV1().LocalSubjectAccessReviews("nowhere").Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "nowhere", Verb: "list", Resource: "pods"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews", []byte(`{}`), "Authorization: Bearer admin-token"); r.code != http.StatusNotFound && r.code != http.StatusMethodNotAllowed {
		t.Fatalf("create without a namespace: %d %s", r.code, r.body)
	}
}

func TestSelfSubjectRulesReview(t *testing.T) {
	ctx := context.Background()
	e := newReviewEnv(t, reviewRules)
	srr := func(token, ns string) (*authorizationv1.SelfSubjectRulesReview, error) {
		return e.as(token).AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	}
	got, err := srr("alice-token", "dev")
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, r := range got.Status.ResourceRules {
		if slices.Equal(r.Resources, []string{"pods"}) {
			verbs = append(verbs, r.Verbs...)
		}
	}
	if !slices.Equal(verbs, []string{"get", "list"}) || got.Status.Incomplete || len(got.Status.NonResourceRules) != 1 || got.Spec.Namespace != "dev" {
		t.Fatalf("alice in dev: %+v", got)
	}
	if got, err = srr("alice-token", "prod"); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Status.ResourceRules {
		if slices.Contains(r.Resources, "pods") {
			t.Fatalf("alice has no pod rules in prod: %+v", got.Status)
		}
	}
	if _, err := srr("alice-token", ""); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "no namespace on request") {
		t.Fatalf("no namespace: %v", err)
	}

	// Without a rule resolver the list is empty and says it is incomplete.
	e2 := newReviewEnv(t, nil)
	got, err = e2.as("alice-token").AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "dev"}}, metav1.CreateOptions{})
	if err != nil || !got.Status.Incomplete || len(got.Status.ResourceRules) != 0 {
		t.Fatalf("no resolver: %+v, %v", got, err)
	}
}

func TestSelfSubjectReview(t *testing.T) {
	e := newReviewEnv(t, reviewRules)
	got, err := e.as("alice-token").AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := got.Status.UserInfo
	if u.Username != "alice" || u.UID != "a-1" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) || !slices.Equal(u.Extra["team"], []string{"blue"}) {
		t.Fatalf("user info %+v", u)
	}
	if got.CreationTimestamp.IsZero() {
		t.Fatal("no creationTimestamp")
	}
}

func TestTokenReview(t *testing.T) {
	// A token authenticator with audiences, as service account tokens
	// have: "vault-token" is valid for the audience "vault" only.
	audTokens := authn.TokenAuthenticatorFunc(func(_ context.Context, token string, auds []string) (*authn.TokenResponse, bool, error) {
		switch token {
		case "vault-token":
			if auds != nil && !slices.Contains(auds, "vault") {
				return nil, false, errors.New("token audiences don't match")
			}
			return &authn.TokenResponse{User: &request.User{Name: "system:serviceaccount:dev:vault"}, Audiences: []string{"vault"}}, true, nil
		case "liar-token":
			return &authn.TokenResponse{User: &request.User{Name: "x"}, Audiences: []string{"elsewhere"}}, true, nil
		}
		return nil, false, nil
	})
	e := newReviewEnv(t, reviewRules, audTokens)
	ctx := context.Background()
	reviews := e.as("reviewer-token").AuthenticationV1().TokenReviews()
	review := func(token string, auds ...string) (*authenticationv1.TokenReview, error) {
		return reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
	}

	got, err := review("alice-token")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.Authenticated || got.Status.User.Username != "alice" || !slices.Equal(got.Status.User.Groups, []string{"devs", "system:authenticated"}) || got.Status.Error != "" {
		t.Fatalf("alice: %+v", got.Status)
	}
	// A static token is audience-agnostic: valid for whatever is asked.
	if got, err = review("alice-token", "api", "vault"); err != nil || !slices.Equal(got.Status.Audiences, []string{"api", "vault"}) {
		t.Fatalf("alice with audiences: %+v, %v", got, err)
	}
	if got, err = review("vault-token", "vault", "other"); err != nil || !got.Status.Authenticated || !slices.Equal(got.Status.Audiences, []string{"vault"}) {
		t.Fatalf("vault token for vault: %+v, %v", got, err)
	}
	if got, err = review("vault-token", "api"); err != nil || got.Status.Authenticated || !strings.Contains(got.Status.Error, "token audiences don't match") || got.Status.User.Username != "" {
		t.Fatalf("vault token for api: %+v, %v", got, err)
	}
	if got, err = review("nobody-token"); err != nil || got.Status.Authenticated || got.Status.Error != authn.ErrInvalidToken.Error() {
		t.Fatalf("unknown token: %+v, %v", got, err)
	}
	if _, err = review("liar-token", "api"); !apierrors.IsInternalError(err) {
		t.Fatalf("authenticator answering another audience: %v", err)
	}
	if _, err = review(""); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "token is required") {
		t.Fatalf("empty token: %v", err)
	}
	if _, err = e.as("bob-token").AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "alice-token"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("bob may not review tokens: %v", err)
	}
}

func TestReviewDiscovery(t *testing.T) {
	e := newReviewEnv(t, reviewRules)
	for gv, want := range map[string][]string{
		"authentication.k8s.io/v1": {"selfsubjectreviews", "tokenreviews"},
		"authorization.k8s.io/v1":  {"localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"},
	} {
		list, err := e.as("admin-token").Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range list.APIResources {
			if !slices.Equal(r.Verbs, metav1.Verbs{"create"}) || r.Namespaced != (r.Name == "localsubjectaccessreviews") {
				t.Errorf("%s/%s: verbs %v namespaced %v", gv, r.Name, r.Verbs, r.Namespaced)
			}
			got = append(got, r.Name)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", gv, got, want)
		}
	}
}

func TestSettersAfterStart(t *testing.T) {
	e := newEnv(t)
	if err := e.api.SetAuthorization(authz.AlwaysAllow(), nil); err == nil {
		t.Fatal("SetAuthorization after Start succeeded")
	}
	if err := e.api.SetTokenAuthenticator(authn.NewAdminToken("x")); err == nil {
		t.Fatal("SetTokenAuthenticator after Start succeeded")
	}
	// Without an authorizer the server cannot answer, and says so.
	r := e.do("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
		[]byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"a","nonResourceAttributes":{"path":"/","verb":"get"}}}`),
		"Content-Type: application/json")
	if r.code != http.StatusServiceUnavailable {
		t.Fatalf("%d %s", r.code, r.body)
	}
}

func TestReviewRawAnswer(t *testing.T) {
	e := newReviewEnv(t, reviewRules)
	r := e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		[]byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"dev","verb":"get","resource":"pods"}}}`),
		"Content-Type: application/json", "Authorization: Bearer alice-token")
	want := `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":{"namespace":"dev","verb":"get","resource":"pods"}},"status":{"allowed":true,"reason":"allowed by the rule table"}}`
	if r.code != http.StatusCreated || strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("%d %s\nwant 201 %s", r.code, r.body, want)
	}
	// A body of another kind is refused, not answered.
	r = e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), "Content-Type: application/json", "Authorization: Bearer alice-token")
	if r.code != http.StatusBadRequest {
		t.Fatalf("wrong kind: %d %s", r.code, r.body)
	}
	r = e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", []byte(`{"spec":`), "Content-Type: application/json", "Authorization: Bearer alice-token")
	if r.code != http.StatusBadRequest {
		t.Fatalf("truncated body: %d %s", r.code, r.body)
	}
}
