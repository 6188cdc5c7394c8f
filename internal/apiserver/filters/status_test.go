package filters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWriteStatusError(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   int
		reason metav1.StatusReason
	}{
		{"api status", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x"), http.StatusNotFound, metav1.StatusReasonNotFound},
		{"wrapped api status", fmt.Errorf("get: %w", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "x", errors.New("stale"))), http.StatusConflict, metav1.StatusReasonConflict},
		{"deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, metav1.StatusReasonTimeout},
		{"body too large", fmt.Errorf("%w: limit is 3", ErrRequestBodyTooLarge), http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge},
		{"other", errors.New("boom"), http.StatusInternalServerError, metav1.StatusReasonInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteStatusError(w, tt.err)
			decodeStatus(t, w, tt.code, tt.reason)
			if w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("missing nosniff")
			}
		})
	}
}

func TestWithRequestInfoRejectsTraversal(t *testing.T) {
	var seen bool
	h := WithRequestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = true }))
	r := httptest.NewRequest("GET", "/", nil)
	r.URL.Path = "/api/v1/namespaces/../secrets"
	decodeStatus(t, serve(h, r), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if seen {
		t.Fatal("handler reached")
	}
}

func TestFiltersNeedRequestInfo(t *testing.T) {
	inflight, err := WithMaxInFlight(MaxInFlightConfig{})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := WithMetrics(MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]Filter{"maxinflight": inflight, "metrics": metrics, "deadline": WithRequestDeadline(0)} {
		t.Run(name, func(t *testing.T) {
			decodeStatus(t, serve(f(okHandler), httptest.NewRequest("GET", "/api/v1/pods", nil)), http.StatusInternalServerError, metav1.StatusReasonInternalError)
		})
	}
}

func TestChainOrder(t *testing.T) {
	var order []string
	mark := func(name string) Filter {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				order = append(order, name)
				next.ServeHTTP(w, r)
			})
		}
	}
	serve(Chain(okHandler, mark("a"), mark("b"), mark("c")), httptest.NewRequest("GET", "/", nil))
	if fmt.Sprint(order) != "[a b c]" {
		t.Fatalf("order %v", order)
	}
}
