package audit

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	kaudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// HeaderAuditID is the response header carrying the request's audit ID,
// and the request header a trusted proxy may set to choose it.
const HeaderAuditID = auditinternal.HeaderAuditID

// Annotation keys the authorization filter sets, as upstream.
const (
	AnnotationDecision = "authorization.k8s.io/decision"
	AnnotationReason   = "authorization.k8s.io/reason"
)

// WithAuditID gives every request an audit context and ID (the request's
// Audit-ID header if it has one, else a new UUID) and sets the Audit-Id
// response header, as upstream's WithAuditInit. It runs whether or not
// auditing is on, early in the chain so every response carries the ID.
func WithAuditID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := kaudit.WithAuditContext(r.Context())
		id := r.Header.Get(HeaderAuditID)
		if id == "" {
			id = uuid.NewString()
		}
		kaudit.WithAuditID(ctx, types.UID(id))
		w.Header().Set(HeaderAuditID, id)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// WithFailedAuthenticationAudit audits the requests authentication
// refuses. It must run immediately before authentication, with
// a.WithAudit immediately after: a request that passes this filter but
// never reaches WithAudit was refused by authentication. A nil Auditor
// audits nothing.
func (a *Auditor) WithFailedAuthenticationAudit() filters.Filter {
	return func(next http.Handler) http.Handler {
		if a == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			next.ServeHTTP(w, r)
			ac := kaudit.AuditContextFrom(r.Context())
			if ac == nil || ac.GetEventLevel() != "" {
				return // no audit context, or WithAudit ran
			}
			a.auditFailedAuthentication(r, ac, start)
		})
	}
}

// auditFailedAuthentication records a request authentication refused, as
// upstream's WithFailedAuthenticationAudit: no user, a 401 status naming
// the methods tried, stage ResponseStarted.
func (a *Auditor) auditFailedAuthentication(r *http.Request, ac *kaudit.AuditContext, start time.Time) {
	info, _ := request.RequestInfoFrom(r.Context())
	attrs := attributes(nil, info)
	rac := a.policy.EvaluatePolicyRule(attrs)
	if err := ac.Init(rac, a.backend); err != nil || rac.Level == auditinternal.LevelNone {
		return
	}
	kaudit.LogRequestMetadata(r.Context(), r, start, attrs)
	ac.SetEventResponseStatus(&metav1.Status{Message: authMethods(r), Code: http.StatusUnauthorized})
	ac.ProcessEventStage(r.Context(), auditinternal.StageResponseStarted)
}

// WithAudit evaluates the audit policy for the authenticated request and
// emits its stages. A nil Auditor audits nothing.
func (a *Auditor) WithAudit() filters.Filter {
	return func(next http.Handler) http.Handler {
		if a == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			ac := kaudit.AuditContextFrom(ctx)
			if ac == nil {
				filters.WriteStatusError(w, errors.New("audit: no audit context (WithAuditID missing from the chain)"))
				return
			}
			received := time.Now()
			info, _ := request.RequestInfoFrom(ctx)
			user, _ := request.UserFrom(ctx)
			attrs := attributes(user, info)
			rac := a.policy.EvaluatePolicyRule(attrs)
			if err := ac.Init(rac, a.backend); err != nil {
				filters.WriteStatusError(w, fmt.Errorf("failed to create audit event: %w", err))
				return
			}
			if rac.Level == auditinternal.LevelNone {
				next.ServeHTTP(w, r)
				return
			}
			kaudit.LogRequestMetadata(ctx, r, received, attrs)
			if !ac.ProcessEventStage(ctx, auditinternal.StageRequestReceived) && a.strict {
				filters.WriteStatusError(w, errors.New("failed to store audit event"))
				return
			}

			longRunning := info.IsLongRunning()
			aw := &auditWriter{ResponseWriter: w, r: r, ac: ac, longRunning: longRunning, protobuf: a.protobuf,
				wantBody: !rac.Level.Less(auditinternal.LevelRequestResponse) && !longRunning, omitManagedFields: rac.OmitManagedFields}
			var reqBody *capture
			if !rac.Level.Less(auditinternal.LevelRequest) && r.Body != nil && r.Body != http.NoBody {
				if reqBody = newCapture(r.Header.Get("Content-Type"), maxBodyBytes, a.protobuf); reqBody != nil {
					r.Body = &teeBody{ReadCloser: r.Body, c: reqBody}
				}
			}

			defer func() {
				if p := recover(); p != nil {
					ac.SetEventResponseStatus(&metav1.Status{
						Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
						Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("APIServer panic'd: %v", p),
					})
					ac.ProcessEventStage(ctx, auditinternal.StagePanic)
					panic(p)
				}
				if reqBody != nil {
					if raw, ok := reqBody.object(rac.OmitManagedFields); ok {
						ac.LogRequestPatch(raw)
					}
				}
				aw.finish()
				ac.ProcessEventStage(ctx, auditinternal.StageResponseComplete)
			}()
			next.ServeHTTP(aw, r)
		})
	}
}

// attributes are upstream's authorizer attributes for the policy and the
// event's metadata.
func attributes(u *request.User, info *request.RequestInfo) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{}
	if u != nil {
		a.User = authn.ToUpstreamUser(u)
	}
	if info != nil {
		a.Verb, a.Path, a.ResourceRequest = info.Verb, info.Path, info.IsResourceRequest
		a.Namespace, a.APIGroup, a.APIVersion = info.Namespace, info.APIGroup, info.APIVersion
		a.Resource, a.Subresource, a.Name = info.Resource, info.Subresource, info.Name
	}
	return a
}

// authMethods is upstream's message for a failed authentication.
func authMethods(r *http.Request) string {
	var methods []string
	if _, _, ok := r.BasicAuth(); ok {
		methods = append(methods, "basic")
	}
	if scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		methods = append(methods, "bearer")
	}
	if r.URL.Query().Get("access_token") != "" {
		methods = append(methods, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		methods = append(methods, "x509")
	}
	if len(methods) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(methods, ", ")
}

// auditWriter notes the response code (emitting ResponseStarted for
// long-running requests, as upstream) and keeps what finish needs of the
// body: all of it at RequestResponse level, the Status of an error
// otherwise. Flush, Hijack and Unwrap are forwarded so watches and
// upgrades work through it.
type auditWriter struct {
	http.ResponseWriter
	r           *http.Request
	ac          *kaudit.AuditContext
	longRunning bool
	wantBody    bool
	// omitManagedFields drops metadata.managedFields from the logged body.
	omitManagedFields bool
	protobuf          runtime.Decoder
	code              int
	body              *capture // RequestResponse: the whole body
	status            *capture // an error's Status
}

func (w *auditWriter) started(code int) {
	if w.code != 0 {
		return
	}
	w.code = code
	w.ac.SetEventResponseStatusCode(int32(code))
	if w.wantBody {
		w.body = newCapture(w.Header().Get("Content-Type"), maxBodyBytes, w.protobuf)
	} else if code >= 400 && !w.longRunning {
		w.status = newCapture(w.Header().Get("Content-Type"), maxStatusBytes, w.protobuf)
	}
	if w.longRunning {
		w.ac.ProcessEventStage(w.r.Context(), auditinternal.StageResponseStarted)
	}
}

func (w *auditWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.started(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	w.started(http.StatusOK)
	if w.body != nil {
		w.body.Write(b)
	} else if w.status != nil {
		w.status.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) Flush() {
	w.started(http.StatusOK)
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *auditWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.started(http.StatusSwitchingProtocols)
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish records the response's status and body on the event.
func (w *auditWriter) finish() {
	if w.code == 0 {
		// The handler wrote nothing: net/http answers 200, and upstream
		// records a client that went away early the same way.
		w.started(http.StatusOK)
	}
	status := &metav1.Status{Code: int32(w.code)}
	if w.status != nil {
		if s, ok := w.status.status(); ok {
			status = s
		}
	}
	if w.body != nil {
		if raw, ok := w.body.object(w.omitManagedFields); ok {
			if w.code >= 400 {
				if s, ok := (&capture{max: len(raw), buf: raw}).status(); ok {
					status = s
				}
			}
			w.ac.LogResponseObject(status, unknown(raw))
			return
		}
	}
	w.ac.LogResponseObject(status, nil)
}
