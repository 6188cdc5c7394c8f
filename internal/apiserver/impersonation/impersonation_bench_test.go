package impersonation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// BenchmarkImpersonation is the filter's cost on a request that does not
// impersonate (every request pays it) and on one that impersonates a user
// and a group (three authorizer calls).
func BenchmarkImpersonation(b *testing.B) {
	h := WithImpersonation(allowImpersonating("users/alice", "groups/devs"), nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ops := &request.User{Name: "ops", Groups: []string{request.GroupAuthenticated}}
	for _, tc := range []struct {
		name    string
		headers map[string]string
	}{
		{"none", nil},
		{"user+group", map[string]string{"Impersonate-User": "alice", "Impersonate-Group": "devs"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			base := httptest.NewRequest("GET", "/api/v1/pods", nil)
			base = base.WithContext(request.WithUser(context.Background(), ops))
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				r := base
				if tc.headers != nil {
					r = base.Clone(base.Context())
					for k, v := range tc.headers {
						r.Header.Set(k, v)
					}
				}
				h.ServeHTTP(w, r)
			}
		})
	}
}
