package authz

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// asUser puts user on the request, as authentication would.
func asUser(user *request.User) filters.Filter {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if user != nil {
				r = r.WithContext(request.WithUser(r.Context(), user))
			}
			next.ServeHTTP(w, r)
		})
	}
}

var ok200 = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

func TestForbiddenMessages(t *testing.T) {
	x := &request.User{Name: "x", Groups: []string{request.GroupAuthenticated}}
	tests := []struct {
		method, url string
		reason      string
		message     string
		details     *metav1.StatusDetails
	}{
		{"GET", "/api/v1/namespaces/ns/pods", "",
			`pods is forbidden: User "x" cannot list resource "pods" in API group "" in the namespace "ns"`,
			&metav1.StatusDetails{Kind: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods/p", "",
			`pods "p" is forbidden: User "x" cannot get resource "pods" in API group "" in the namespace "ns"`,
			&metav1.StatusDetails{Name: "p", Kind: "pods"}},
		{"GET", "/api/v1/nodes?watch=1", "",
			`nodes is forbidden: User "x" cannot watch resource "nodes" in API group "" at the cluster scope`,
			&metav1.StatusDetails{Kind: "nodes"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "no RBAC policy matched",
			`deployments.apps "d" is forbidden: User "x" cannot update resource "deployments/scale" in API group "apps" in the namespace "ns": no RBAC policy matched`,
			&metav1.StatusDetails{Name: "d", Group: "apps", Kind: "deployments"}},
		{"DELETE", "/api/v1/namespaces/ns/secrets", "",
			`secrets is forbidden: User "x" cannot deletecollection resource "secrets" in API group "" in the namespace "ns"`,
			&metav1.StatusDetails{Kind: "secrets"}},
		{"GET", "/metrics", "",
			`forbidden: User "x" cannot get path "/metrics"`,
			&metav1.StatusDetails{}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			deny := AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
				return DecisionNoOpinion, tt.reason, nil
			})
			h := filters.Chain(ok200, filters.WithRequestInfo, asUser(x), WithAuthorization(deny, nil))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.url, nil))
			if w.Code != http.StatusForbidden {
				t.Fatalf("code %d", w.Code)
			}
			var s metav1.Status
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			if s.Kind != "Status" || s.Reason != metav1.StatusReasonForbidden || s.Code != 403 {
				t.Fatalf("status %+v", s)
			}
			if s.Message != tt.message {
				t.Fatalf("message\n got %s\nwant %s", s.Message, tt.message)
			}
			if !reflect.DeepEqual(s.Details, tt.details) {
				t.Fatalf("details %+v, want %+v", *s.Details, *tt.details)
			}
		})
	}
}

func TestWithAuthorization(t *testing.T) {
	admin := &request.User{Name: request.AdminUser, Groups: []string{request.GroupMasters, request.GroupAuthenticated}}
	bob := &request.User{Name: "bob", Groups: []string{request.GroupAuthenticated}}
	// A stand-in for RBAC: bob may read pods in his namespace, nothing else.
	rbacLike := AuthorizerFunc(func(_ context.Context, a Attributes) (Decision, string, error) {
		if a.User.Name == "bob" && a.Resource == "pods" && a.Namespace == "bob" && (a.Verb == "get" || a.Verb == "list" || a.Verb == "watch") {
			return DecisionAllow, "", nil
		}
		return DecisionNoOpinion, "", nil
	})
	failing := AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
		return DecisionNoOpinion, "", errors.New("policy store unavailable")
	})
	tests := []struct {
		name   string
		az     Authorizer
		user   *request.User
		method string
		url    string
		code   int
	}{
		{"always allow", AlwaysAllow(), bob, "DELETE", "/api/v1/nodes/n", 200},
		{"always deny", AlwaysDeny(), admin, "GET", "/healthz", 403},
		{"masters allowed before RBAC", Union(PrivilegedGroups(request.GroupMasters), rbacLike), admin, "DELETE", "/api/v1/nodes/n", 200},
		{"RBAC allows", Union(PrivilegedGroups(request.GroupMasters), rbacLike), bob, "GET", "/api/v1/namespaces/bob/pods?watch=true", 200},
		{"RBAC has no opinion", Union(PrivilegedGroups(request.GroupMasters), rbacLike), bob, "GET", "/api/v1/namespaces/alice/pods", 403},
		{"deny stops the union", Union(AlwaysDeny(), AlwaysAllow()), admin, "GET", "/api/v1/pods", 403},
		{"authorizer error", Union(failing), bob, "GET", "/api/v1/pods", 500},
		{"allow wins over error", Union(failing, AlwaysAllow()), bob, "GET", "/api/v1/pods", 200},
		{"no user on context", AlwaysAllow(), nil, "GET", "/api/v1/pods", 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := filters.Chain(ok200, filters.WithRequestInfo, asUser(tt.user), WithAuthorization(tt.az, nil))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.url, nil))
			if w.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", w.Code, tt.code, w.Body)
			}
		})
	}
}

func TestAttributesFrom(t *testing.T) {
	r := httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp&watch=1", nil)
	info, err := request.Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	u := &request.User{Name: "u"}
	got := AttributesFrom(u, info)
	want := Attributes{User: u, Verb: "watch", IsResourceRequest: true, Namespace: "ns", APIVersion: "v1", Resource: "pods", Name: "p", FieldSelector: "metadata.name=p", Path: "/api/v1/namespaces/ns/pods"}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
