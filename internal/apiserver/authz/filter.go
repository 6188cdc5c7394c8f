package authz

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/audit"

	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// WithAuthorization asks az about every request and lets it through only on
// DecisionAllow. Otherwise it answers 500 if the authorizer failed, else
// 403 Forbidden with upstream's message. It needs request.RequestInfo and
// request.User on the context (filters.WithRequestInfo and
// authn.WithAuthentication earlier in the chain); a request lacking either
// is refused, never waved through.
func WithAuthorization(az Authorizer, logger *slog.Logger) filters.Filter {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			info, ok := request.RequestInfoFrom(ctx)
			if !ok {
				filters.WriteStatusError(w, errors.New("no RequestInfo found in the context"))
				return
			}
			user, ok := request.UserFrom(ctx)
			if !ok {
				filters.WriteStatusError(w, errors.New("no User found in the context"))
				return
			}
			attrs := AttributesFrom(user, info)
			decision, reason, err := az.Authorize(ctx, attrs)
			// An authorizer may allow on one rule while failing on another;
			// the decision counts before the error, as upstream.
			if decision == DecisionAllow {
				// Upstream's annotations; a no-op unless the request is audited.
				audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "allow", "authorization.k8s.io/reason", reason)
				next.ServeHTTP(w, r)
				return
			}
			if err != nil {
				logger.ErrorContext(ctx, "authorization error", "user", user.Name, "path", r.URL.Path, "err", err)
				filters.WriteStatusError(w, fmt.Errorf("authorization error: %w", err))
				return
			}
			audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "forbid", "authorization.k8s.io/reason", reason)
			logger.DebugContext(ctx, "forbidden", "user", user.Name, "verb", attrs.Verb, "path", r.URL.Path, "reason", reason)
			status := Forbidden(attrs, reason).ErrStatus
			filters.WriteStatus(w, &status)
		})
	}
}

// Forbidden is the 403 error upstream answers for a refused request, e.g.
//
//	pods is forbidden: User "x" cannot list resource "pods" in API group "" in the namespace "ns"
//
// with ": reason" appended when reason is not empty.
func Forbidden(a Attributes, reason string) *apierrors.StatusError {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg = msg + ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

func forbiddenMessage(a Attributes) string {
	user := a.UserName()
	if !a.IsResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", user, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", user, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, a.Verb, resource, a.APIGroup)
}
