package impersonation

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// allowImpersonating allows user "ops" to impersonate whatever is listed
// as resource/name (extras as userextras/<key>/value), and nothing else.
func allowImpersonating(allowed ...string) authz.Authorizer {
	return authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User.Name != "ops" || a.Verb != "impersonate" {
			return authz.DecisionNoOpinion, "", nil
		}
		key := a.Resource
		if a.Subresource != "" {
			key += "/" + a.Subresource
		}
		if a.Namespace != "" {
			key += "/" + a.Namespace
		}
		key += "/" + a.Name
		if slices.Contains(allowed, key) {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
}

// echoUser answers with the user on the context as JSON, and the
// impersonation headers it still sees.
var echoUser = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	u, _ := request.UserFrom(r.Context())
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "impersonate-") {
			http.Error(w, "impersonation header leaked: "+name, 500)
			return
		}
	}
	json.NewEncoder(w).Encode(u)
})

func TestWithImpersonation(t *testing.T) {
	az := allowImpersonating("users/alice", "groups/devs", "groups/system:masters", "uids/1234",
		"userextras/scopes.example.com/x/read", "serviceaccounts/kube-system/builder", "users/system:anonymous")
	h := WithImpersonation(az, nil)(echoUser)
	ops := &request.User{Name: "ops", Groups: []string{request.GroupAuthenticated}}

	tests := []struct {
		name      string
		requester *request.User
		headers   map[string][]string
		code      int
		want      *request.User
		message   string
	}{
		{name: "no impersonation", requester: ops, code: 200, want: ops},
		{name: "user", requester: ops, headers: map[string][]string{"Impersonate-User": {"alice"}},
			code: 200, want: &request.User{Name: "alice", Groups: []string{request.GroupAuthenticated}}},
		{name: "user and groups and uid", requester: ops,
			headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Group": {"devs", "system:masters"}, "Impersonate-Uid": {"1234"}},
			code:    200, want: &request.User{Name: "alice", UID: "1234", Groups: []string{"devs", "system:masters", request.GroupAuthenticated}}},
		{name: "extra with an escaped key", requester: ops,
			headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Extra-Scopes.example.com%2fx": {"read"}},
			code:    200, want: &request.User{Name: "alice", Groups: []string{request.GroupAuthenticated}, Extra: map[string][]string{"scopes.example.com/x": {"read"}}}},
		{name: "service account gets its groups", requester: ops,
			headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:kube-system:builder"}},
			code:    200, want: &request.User{Name: "system:serviceaccount:kube-system:builder",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", request.GroupAuthenticated}}},
		{name: "anonymous stays unauthenticated", requester: ops, headers: map[string][]string{"Impersonate-User": {"system:anonymous"}},
			code: 200, want: &request.User{Name: "system:anonymous", Groups: []string{request.GroupUnauthenticated}}},
		{name: "forbidden user", requester: ops, headers: map[string][]string{"Impersonate-User": {"bob"}}, code: 403,
			message: `users.authentication.k8s.io "bob" is forbidden: User "ops" cannot impersonate resource "users" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "forbidden group", requester: ops, headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Group": {"admins"}}, code: 403,
			message: `groups.authentication.k8s.io "admins" is forbidden: User "ops" cannot impersonate resource "groups" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "forbidden service account", requester: ops, headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:default:x"}}, code: 403,
			message: `serviceaccounts "x" is forbidden: User "ops" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"`},
		{name: "forbidden extra value", requester: ops,
			headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Extra-Scopes.example.com%2fx": {"write"}}, code: 403},
		{name: "another requester", requester: &request.User{Name: "eve"}, headers: map[string][]string{"Impersonate-User": {"alice"}}, code: 403},
		{name: "group without user", requester: ops, headers: map[string][]string{"Impersonate-Group": {"devs"}}, code: 400},
		{name: "uid without user", requester: ops, headers: map[string][]string{"Impersonate-Uid": {"1234"}}, code: 400},
		{name: "extra without user", requester: ops, headers: map[string][]string{"Impersonate-Extra-A": {"b"}}, code: 400},
		{name: "bad extra key", requester: ops, headers: map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Extra-%zz": {"b"}}, code: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			for k, vs := range tt.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			r = r.WithContext(request.WithUser(r.Context(), tt.requester))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", w.Code, tt.code, w.Body)
			}
			if tt.code != 200 {
				var s metav1.Status
				if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || s.Kind != "Status" || s.Code != int32(tt.code) {
					t.Fatalf("not a Status with code %d: %s", tt.code, w.Body)
				}
				if tt.message != "" && s.Message != tt.message {
					t.Fatalf("message\n %s\nwant\n %s", s.Message, tt.message)
				}
				return
			}
			var got request.User
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&got, tt.want) {
				t.Fatalf("user %+v, want %+v", got, *tt.want)
			}
		})
	}
}

// FuzzParse checks that no header set crashes the parser, that errors are
// ErrMalformed, and that a successful parse names a user whenever it
// names anything.
func FuzzParse(f *testing.F) {
	f.Add("alice", "devs", "1234", "Scopes%2fx", "read")
	f.Add("system:serviceaccount:ns:sa", "", "", "", "")
	f.Add("", "g", "", "", "")
	f.Add("u", "", "", "%zz", "v")
	f.Add("system:serviceaccount::", "", "", "%", "")
	f.Fuzz(func(t *testing.T, user, group, uid, extraKey, extraValue string) {
		h := http.Header{}
		if user != "" {
			h.Set("Impersonate-User", user)
		}
		if group != "" {
			h.Add("Impersonate-Group", group)
		}
		if uid != "" {
			h.Set("Impersonate-Uid", uid)
		}
		if extraKey != "" {
			h["Impersonate-Extra-"+extraKey] = []string{extraValue}
		}
		targets, err := Parse(h)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(targets) == 0 {
			if user != "" {
				t.Fatal("user header ignored")
			}
			return
		}
		u := Identity(targets)
		if u.Name != user {
			t.Fatalf("impersonated %q, asked for %q", u.Name, user)
		}
		if !u.InGroup(request.GroupAuthenticated) && !u.InGroup(request.GroupUnauthenticated) {
			t.Fatalf("groups %v lack system:authenticated", u.Groups)
		}
	})
}
