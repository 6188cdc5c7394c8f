package apiserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzReviews POSTs arbitrary bodies to every review resource, as alice,
// through authentication and authorization: the answer is a review (201)
// or a client error, never a server error or a crash.
func FuzzReviews(f *testing.F) {
	e := newReviewEnv(f, reviewRules)
	h := e.srv.Config.Handler
	for _, seed := range []string{
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"dev","verb":"get","resource":"pods"}}}`,
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list","resource":"pods","labelSelector":{"rawSelector":"a in (b"},"fieldSelector":{"requirements":[{"key":"k","operator":"In","values":["a","b"]}]}}}}`,
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"dev"}}`,
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","extra":{"a":["b"]},"nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`,
		`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"dev"},"spec":{"groups":["g"],"resourceAttributes":{"namespace":"dev"}}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"bob-token","audiences":["x"]}}`,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`,
		`{"kind":"SubjectAccessReview","spec":null}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	paths := []string{
		"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		"/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
		"/apis/authorization.k8s.io/v1/subjectaccessreviews",
		"/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews",
		"/apis/authentication.k8s.io/v1/tokenreviews",
		"/apis/authentication.k8s.io/v1/selfsubjectreviews",
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range paths {
			for _, token := range []string{"alice-token", "admin-token"} {
				req := httptest.NewRequest("POST", p, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code >= 500 || (w.Code != http.StatusCreated && w.Code < 400) {
					t.Fatalf("POST %s as %s: %d %s", p, token, w.Code, w.Body)
				}
			}
		}
	})
}
