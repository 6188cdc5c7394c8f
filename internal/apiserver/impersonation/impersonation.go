package impersonation

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ErrMalformed is wrapped by every error about malformed impersonation
// headers.
var ErrMalformed = errors.New("malformed impersonation request")

// Kind is the kind of one impersonated attribute.
type Kind int

const (
	KindUser Kind = iota
	KindServiceAccount
	KindGroup
	KindUID
	KindExtra
)

// Target is one attribute a request asks to impersonate; each is
// authorized on its own.
type Target struct {
	Kind Kind
	// Name is the user, group, uid or extra value; for a service account,
	// its name.
	Name string
	// Namespace is a service account's namespace.
	Namespace string
	// ExtraKey is the decoded, lower-cased key of an extra value.
	ExtraKey string
}

// Parse reads the impersonation headers of h. It returns no targets when
// the request impersonates nothing, and an error wrapping ErrMalformed when
// groups, a uid or extras are asked for without a user, or an extra key is
// not valid percent-encoding.
func Parse(h http.Header) ([]Target, error) {
	var targets []Target
	userName := h.Get(authenticationv1.ImpersonateUserHeader)
	if userName != "" {
		if ns, name, err := serviceaccount.SplitUsername(userName); err == nil {
			targets = append(targets, Target{Kind: KindServiceAccount, Namespace: ns, Name: name})
		} else {
			targets = append(targets, Target{Kind: KindUser, Name: userName})
		}
	}
	others := false
	for _, g := range h.Values(authenticationv1.ImpersonateGroupHeader) {
		others = true
		targets = append(targets, Target{Kind: KindGroup, Name: g})
	}
	for name, values := range h {
		encoded, ok := cutPrefixFold(name, authenticationv1.ImpersonateUserExtraHeaderPrefix)
		if !ok {
			continue
		}
		others = true
		// Header names are case-insensitive, so keys are lower-cased
		// before decoding, as upstream; %-escapes carry what a header name
		// cannot (e.g. "/" in "scopes.example.com/x").
		key, err := url.PathUnescape(strings.ToLower(encoded))
		if err != nil || key == "" {
			return nil, fmt.Errorf("%w: invalid extra key in header %q", ErrMalformed, name)
		}
		for _, v := range values {
			targets = append(targets, Target{Kind: KindExtra, ExtraKey: key, Name: v})
		}
	}
	if uid := h.Get(authenticationv1.ImpersonateUIDHeader); uid != "" {
		others = true
		targets = append(targets, Target{Kind: KindUID, Name: uid})
	}
	if others && userName == "" {
		return nil, fmt.Errorf("%w: requested groups, uid or extras without impersonating a user", ErrMalformed)
	}
	return targets, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return s[len(prefix):], true
}

// attributes is what the requester must be allowed to do for t.
func (t Target) attributes(requester *request.User) authz.Attributes {
	a := authz.Attributes{User: requester, Verb: "impersonate", IsResourceRequest: true, Name: t.Name}
	switch t.Kind {
	case KindServiceAccount:
		a.APIVersion, a.Resource, a.Namespace = "v1", "serviceaccounts", t.Namespace
	case KindUser:
		a.APIGroup, a.APIVersion, a.Resource = authenticationv1.GroupName, "v1", "users"
	case KindGroup:
		a.APIGroup, a.APIVersion, a.Resource = authenticationv1.GroupName, "v1", "groups"
	case KindUID:
		a.APIGroup, a.APIVersion, a.Resource = authenticationv1.GroupName, "v1", "uids"
	case KindExtra:
		a.APIGroup, a.APIVersion, a.Resource, a.Subresource = authenticationv1.GroupName, "v1", "userextras", t.ExtraKey
	}
	return a
}

// Identity is the user targets describe, with system:authenticated (or
// system:unauthenticated for system:anonymous) added as upstream.
func Identity(targets []Target) *request.User {
	u := &request.User{}
	groupsSpecified := false
	for _, t := range targets {
		if t.Kind == KindGroup {
			groupsSpecified = true
		}
	}
	for _, t := range targets {
		switch t.Kind {
		case KindServiceAccount:
			u.Name = serviceaccount.MakeUsername(t.Namespace, t.Name)
			if !groupsSpecified {
				u.Groups = append(u.Groups, serviceaccount.MakeGroupNames(t.Namespace)...)
			}
		case KindUser:
			u.Name = t.Name
		case KindGroup:
			u.Groups = append(u.Groups, t.Name)
		case KindUID:
			u.UID = t.Name
		case KindExtra:
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[t.ExtraKey] = append(u.Extra[t.ExtraKey], t.Name)
		}
	}
	if u.Name == request.AnonymousUser {
		if !u.InGroup(request.GroupUnauthenticated) {
			u.Groups = append(u.Groups, request.GroupUnauthenticated)
		}
	} else if !u.InGroup(request.GroupAuthenticated) && !u.InGroup(request.GroupUnauthenticated) {
		u.Groups = append(u.Groups, request.GroupAuthenticated)
	}
	return u
}

// WithImpersonation replaces the authenticated user with the impersonated
// one when the request asks for it and az allows every part of it. It
// needs request.User on the context (authn.WithAuthentication).
func WithImpersonation(az authz.Authorizer, logger *slog.Logger) filters.Filter {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			targets, err := Parse(r.Header)
			if err != nil {
				filters.WriteStatus(w, &apierrors.NewBadRequest(err.Error()).ErrStatus)
				return
			}
			if len(targets) == 0 {
				next.ServeHTTP(w, r)
				return
			}
			ctx := r.Context()
			requester, ok := request.UserFrom(ctx)
			if !ok {
				filters.WriteStatusError(w, errors.New("no user found for request"))
				return
			}
			for _, t := range targets {
				attrs := t.attributes(requester)
				decision, reason, err := az.Authorize(ctx, attrs)
				if decision == authz.DecisionAllow {
					continue
				}
				if err != nil {
					logger.DebugContext(ctx, "impersonation authorization error", "user", requester.Name, "err", err)
				}
				logger.DebugContext(ctx, "impersonation forbidden", "user", requester.Name, "target", t.Name, "reason", reason)
				status := authz.Forbidden(attrs, reason).ErrStatus
				filters.WriteStatus(w, &status)
				return
			}
			u := Identity(targets)
			logger.DebugContext(ctx, "impersonating", "user", requester.Name, "as", u.Name)
			audit.LogImpersonatedUser(ctx, authn.ToUpstreamUser(u), "")
			filters.NoteUser(ctx, u)

			// The headers go no further: a proxied request must not
			// impersonate again with the new identity's rights.
			r = r.WithContext(request.WithUser(ctx, u))
			r.Header.Del(authenticationv1.ImpersonateUserHeader)
			r.Header.Del(authenticationv1.ImpersonateGroupHeader)
			r.Header.Del(authenticationv1.ImpersonateUIDHeader)
			for name := range r.Header {
				if _, ok := cutPrefixFold(name, authenticationv1.ImpersonateUserExtraHeaderPrefix); ok {
					r.Header.Del(name)
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
