package apiserver

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLegacyBindings checks the top-level bindings resource: a POST of a
// Binding to the collection binds the pod the body names, with the checks
// and answers of pods/binding.
func TestLegacyBindings(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.cs.CoreV1().Pods("default").Create(ctx, testPod("p", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const bindings = "/api/v1/namespaces/default/bindings"
	const js = "Content-Type: application/json"
	bind := func(body string) response {
		return e.do(http.MethodPost, bindings, []byte(body), js)
	}

	r := bind(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","annotations":{"a":"b"}},"target":{"kind":"Node","name":"n1"}}`)
	if st := r.status(t); r.code != http.StatusCreated || st.Status != metav1.StatusSuccess {
		t.Fatalf("bind: %d %s", r.code, r.body)
	}
	p, err := e.cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := false
	for _, c := range p.Status.Conditions {
		scheduled = scheduled || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue)
	}
	if p.Spec.NodeName != "n1" || p.Annotations["a"] != "b" || !scheduled {
		t.Errorf("bound pod: node %q annotations %v conditions %+v", p.Spec.NodeName, p.Annotations, p.Status.Conditions)
	}

	cases := []struct {
		name, method, path, body string
		code                     int
		reason                   metav1.StatusReason
	}{
		{"already bound", http.MethodPost, bindings, `{"metadata":{"name":"p"},"target":{"name":"n2"}}`, http.StatusConflict, metav1.StatusReasonConflict},
		{"missing pod", http.MethodPost, bindings, `{"metadata":{"name":"missing"},"target":{"name":"n1"}}`, http.StatusNotFound, metav1.StatusReasonNotFound},
		{"no name", http.MethodPost, bindings, `{"target":{"name":"n1"}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"not a node", http.MethodPost, bindings, `{"metadata":{"name":"p"},"target":{"kind":"Pod","name":"x"}}`, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"no target", http.MethodPost, bindings, `{"metadata":{"name":"p"}}`, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"not JSON", http.MethodPost, bindings, `{`, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"list", http.MethodGet, bindings, "", http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
		{"item path", http.MethodPost, bindings + "/p", `{"metadata":{"name":"p"},"target":{"name":"n1"}}`, http.StatusNotFound, metav1.StatusReasonNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			e.do(tc.method, tc.path, body, js).wantStatus(t, tc.code, tc.reason)
		})
	}
}
