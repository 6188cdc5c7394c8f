package authn

import (
	"log/slog"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// DefaultPublicPaths returns the paths open to requests without credentials,
// as upstream's system:public-info-viewer role: health checks and the
// version; and kube-public's cluster-info ConfigMap, which a joining node
// reads before it has credentials (kubeadm join's discovery; the default
// policy lets system:anonymous get it, as kubeadm's does). RBAC still
// decides every one of them.
func DefaultPublicPaths() []string {
	return []string{"/livez", "/readyz", "/healthz", "/version", "/version/", ClusterInfoPath}
}

// ClusterInfoPath is the path of kube-public/cluster-info.
const ClusterInfoPath = "/api/v1/namespaces/kube-public/configmaps/cluster-info"

// Config configures WithAuthentication.
type Config struct {
	// PublicPaths may be requested without credentials, as
	// system:anonymous. An entry ending in "*" matches by prefix (as in
	// RBAC nonResourceURLs). Nil means DefaultPublicPaths(); an empty,
	// non-nil slice means none.
	PublicPaths []string
	// Logger receives authentication failures at debug level. Default
	// slog.Default().
	Logger *slog.Logger
}

// WithAuthentication authenticates every request with auth and puts the
// user on the context (request.WithUser). Requests without credentials on a
// public path proceed as system:anonymous (group system:unauthenticated);
// all other failures are answered 401 with an Unauthorized Status. The
// failure reason is logged, never sent: it would help an attacker more
// than a client.
func WithAuthentication(auth Authenticator, cfg Config) filters.Filter {
	public := cfg.PublicPaths
	if public == nil {
		public = DefaultPublicPaths()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	anonymous := &request.User{Name: request.AnonymousUser, Groups: []string{request.GroupUnauthenticated}}

	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok, err := auth.AuthenticateRequest(r)
			if !ok {
				if err != nil || !isPublic(r.URL.Path, public) {
					logger.DebugContext(r.Context(), "unauthorized request",
						"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
					filters.WriteStatus(w, &apierrors.NewUnauthorized("Unauthorized").ErrStatus)
					return
				}
				u = anonymous
			}
			filters.NoteUser(r.Context(), u)
			next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
		})
	}
}

func isPublic(path string, public []string) bool {
	for _, p := range public {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(path, prefix) {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}
