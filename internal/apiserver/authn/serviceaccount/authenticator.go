package serviceaccount

import (
	"context"
	"crypto"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Getter reads one object, as apiserver.Server.GetObject: rv "0" answers
// from the watch cache as it stands, rv "" is a consistent read. An absent
// object is an error for which apierrors.IsNotFound holds.
type Getter interface {
	GetObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, rv string) (runtime.Object, error)
}

var (
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
	secretsGVR         = corev1.SchemeGroupVersion.WithResource("secrets")
	nodesGVR           = corev1.SchemeGroupVersion.WithResource("nodes")
)

// AuthenticatorConfig configures NewAuthenticator.
type AuthenticatorConfig struct {
	// Issuers are the iss values of bound tokens accepted (upstream's
	// repeated --service-account-issuer: the first issues, the others are
	// still accepted during a migration). Required.
	Issuers []string
	// Keys verify signatures (upstream's --service-account-key-file).
	// Required.
	Keys []crypto.PublicKey
	// APIAudiences are the audiences a request to the API server accepts
	// (--api-audiences; default Issuers). A legacy token, which has no
	// audience, is taken as having these.
	APIAudiences []string
	// Legacy accepts Secret-based tokens of LegacyIssuer, each valid while
	// its Secret exists holding it.
	Legacy bool
	// Getter reads ServiceAccounts, Pods, Secrets and Nodes. Required.
	Getter Getter
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
}

// Authenticator checks ServiceAccount tokens. Safe for concurrent use.
type Authenticator struct {
	issuers   []string
	legacy    bool
	audiences []string
	algs      []jose.SignatureAlgorithm
	keys      []verificationKey
	getter    Getter
	clock     clock.PassiveClock
}

type verificationKey struct {
	id  string
	key crypto.PublicKey
}

var _ authn.TokenAuthenticator = (*Authenticator)(nil)

// NewAuthenticator validates cfg and builds the authenticator.
func NewAuthenticator(cfg AuthenticatorConfig) (*Authenticator, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("serviceaccount: at least one issuer is required")
	}
	if len(cfg.Keys) == 0 {
		return nil, errors.New("serviceaccount: at least one public key is required")
	}
	if cfg.Getter == nil {
		return nil, errors.New("serviceaccount: a Getter is required")
	}
	a := &Authenticator{
		issuers: slices.Clone(cfg.Issuers), legacy: cfg.Legacy, audiences: slices.Clone(cfg.APIAudiences),
		getter: cfg.Getter, clock: cfg.Clock,
	}
	if len(a.audiences) == 0 {
		a.audiences = slices.Clone(cfg.Issuers)
	}
	if a.clock == nil {
		a.clock = clock.RealClock{}
	}
	for _, k := range cfg.Keys {
		alg, err := algorithmFor(k)
		if err != nil {
			return nil, err
		}
		id, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(a.algs, alg) {
			a.algs = append(a.algs, alg)
		}
		a.keys = append(a.keys, verificationKey{id: id, key: k})
	}
	return a, nil
}

// errInvalidSignature hides which of the keys failed and why.
var errInvalidSignature = errors.New("service account token: invalid signature")

// AuthenticateToken implements authn.TokenAuthenticator. audiences nil
// means the API server's own (APIAudiences).
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string, audiences []string) (*authn.TokenResponse, bool, error) {
	// Only the algorithms of our own keys parse: "none", HMAC (keyed
	// with our public key by an attacker) and the rest fail here.
	tok, err := jwt.ParseSigned(token, a.algs)
	if err != nil {
		return nil, false, nil // not a JWT we could have signed: another authenticator's
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, false, nil
	}
	legacy := unverified.Issuer == LegacyIssuer
	if !(legacy && a.legacy) && !slices.Contains(a.issuers, unverified.Issuer) {
		return nil, false, nil // another issuer's: an OIDC authenticator may know it
	}

	var public jwt.Claims
	var bound privateClaims
	var old legacyClaims
	private := any(&bound)
	if legacy {
		private = &old
	}
	if !a.verify(tok, &public, private) {
		return nil, false, errInvalidSignature
	}
	if public.Issuer != unverified.Issuer {
		return nil, false, errInvalidSignature // cannot happen: the same payload, now verified
	}

	tokenAuds := []string(public.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = a.audiences // legacy tokens are for the API server only
	}
	if audiences == nil {
		audiences = a.audiences
	}
	var auds []string
	for _, aud := range tokenAuds {
		if slices.Contains(audiences, aud) && !slices.Contains(auds, aud) {
			auds = append(auds, aud)
		}
	}
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, audiences)
	}

	var user *request.User
	if legacy {
		user, err = a.validateLegacy(ctx, token, &public, &old)
	} else {
		user, err = a.validateBound(ctx, &public, &bound)
	}
	if err != nil {
		return nil, false, err
	}
	return &authn.TokenResponse{User: user, Audiences: auds}, true, nil
}

// verify checks tok's signature with the key its header names, or with
// each key when it names none we hold, and decodes the claims.
func (a *Authenticator) verify(tok *jwt.JSONWebToken, public *jwt.Claims, private any) bool {
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	named := kid != "" && slices.ContainsFunc(a.keys, func(k verificationKey) bool { return k.id == kid })
	for _, k := range a.keys {
		if named && k.id != kid {
			continue
		}
		if tok.Claims(k.key, public, private) == nil {
			return true
		}
	}
	return false
}

// validateBound checks a bound token's times and that what it names still
// exists with the same uid, as upstream's validator.
func (a *Authenticator) validateBound(ctx context.Context, public *jwt.Claims, private *privateClaims) (*request.User, error) {
	now := a.clock.Now()
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: now}, jwt.DefaultLeeway); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, errors.New("service account token is issued in the future")
	default:
		return nil, errors.New("service account token claims could not be validated")
	}
	if public.Expiry == nil {
		// Every bound token we issue expires; one that does not was not
		// issued as a bound token.
		return nil, errors.New("service account token has no expiry")
	}
	k := private.Kubernetes
	if k.Namespace == "" || k.Svcacct.Name == "" || k.Svcacct.UID == "" {
		return nil, errors.New("service account token has no kubernetes.io service account claims")
	}
	if ns, name, err := SplitUsername(public.Subject); err != nil || ns != k.Namespace || name != k.Svcacct.Name {
		return nil, errors.New("sub claim is invalid")
	}
	// Objects deleted within the leeway still count, as upstream, so a
	// pod's last requests during its graceful deletion succeed.
	deletedBefore := now.Add(-jwt.DefaultLeeway)

	sa, err := a.get(ctx, serviceAccountsGVR, k.Namespace, k.Svcacct.Name, k.Svcacct.UID)
	if err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", k.Namespace, k.Svcacct.Name, err)
	}
	if string(sa.GetUID()) != k.Svcacct.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.GetUID(), k.Svcacct.UID)
	}
	if deletedAt(sa, deletedBefore) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.Svcacct.Name)
	}
	if k.Secret != nil {
		if err := a.checkBound(ctx, secretsGVR, k.Namespace, k.Secret, deletedBefore); err != nil {
			return nil, err
		}
	}
	u := &request.User{
		Name:   public.Subject,
		UID:    k.Svcacct.UID,
		Groups: []string{AllServiceAccounts, GroupPrefix + k.Namespace},
		Extra:  map[string][]string{},
	}
	if k.Pod != nil {
		if err := a.checkBound(ctx, podsGVR, k.Namespace, k.Pod, deletedBefore); err != nil {
			return nil, err
		}
		u.Extra[ExtraPodName] = []string{k.Pod.Name}
		u.Extra[ExtraPodUID] = []string{k.Pod.UID}
	}
	if k.Node != nil {
		// A pod-bound token names its node for information only; a token
		// bound to the node itself lives as long as the node.
		if k.Pod == nil {
			if err := a.checkBound(ctx, nodesGVR, "", k.Node, deletedBefore); err != nil {
				return nil, err
			}
		}
		u.Extra[ExtraNodeName] = []string{k.Node.Name}
		if k.Node.UID != "" {
			u.Extra[ExtraNodeUID] = []string{k.Node.UID}
		}
	}
	if public.ID != "" {
		u.Extra[ExtraCredentialID] = []string{credentialIDJTIPrefix + public.ID}
	}
	return u, nil
}

// checkBound checks that the object a token is bound to still exists with
// the uid the token names and was not deleted before deletedBefore.
func (a *Authenticator) checkBound(ctx context.Context, gvr schema.GroupVersionResource, ns string, r *ref, deletedBefore time.Time) error {
	obj, err := a.get(ctx, gvr, ns, r.Name, r.UID)
	if err != nil {
		return errors.New("service account token has been invalidated")
	}
	if string(obj.GetUID()) != r.UID {
		kind := strings.TrimSuffix(gvr.Resource, "s")
		return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", kind, obj.GetUID(), kind, r.UID)
	}
	if deletedAt(obj, deletedBefore) {
		return errors.New("service account token has been invalidated")
	}
	return nil
}

// validateLegacy checks a Secret-based token: its claims agree, its Secret
// still exists holding exactly this token, and its ServiceAccount exists
// with the uid it names, as upstream's legacy validator. Legacy tokens do
// not expire.
func (a *Authenticator) validateLegacy(ctx context.Context, token string, public *jwt.Claims, private *legacyClaims) (*request.User, error) {
	switch {
	case public.Subject == "":
		return nil, errors.New("sub claim is missing")
	case private.Namespace == "":
		return nil, errors.New("namespace claim is missing")
	case private.SecretName == "":
		return nil, errors.New("secretName claim is missing")
	case private.ServiceAccountName == "":
		return nil, errors.New("serviceAccountName claim is missing")
	case private.ServiceAccountUID == "":
		return nil, errors.New("serviceAccountUID claim is missing")
	}
	if ns, name, err := SplitUsername(public.Subject); err != nil || ns != private.Namespace || name != private.ServiceAccountName {
		return nil, errors.New("sub claim is invalid")
	}
	secret, err := a.legacySecret(ctx, private.Namespace, private.SecretName, token)
	if err != nil {
		return nil, err
	}
	if secret.DeletionTimestamp != nil {
		return nil, errors.New("token has been invalidated")
	}
	sa, err := a.get(ctx, serviceAccountsGVR, private.Namespace, private.ServiceAccountName, private.ServiceAccountUID)
	if err != nil {
		return nil, fmt.Errorf("service account %s/%s: %w", private.Namespace, private.ServiceAccountName, err)
	}
	if sa.GetDeletionTimestamp() != nil {
		return nil, fmt.Errorf("service account %s/%s has been deleted", private.Namespace, private.ServiceAccountName)
	}
	if string(sa.GetUID()) != private.ServiceAccountUID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.GetUID(), private.ServiceAccountUID)
	}
	return &request.User{
		Name:   public.Subject,
		UID:    private.ServiceAccountUID,
		Groups: []string{AllServiceAccounts, GroupPrefix + private.Namespace},
	}, nil
}

// legacySecret reads the Secret holding a legacy token: from the cache,
// and again consistently when the cached copy does not hold token (the
// token controller may have filled it a moment ago).
func (a *Authenticator) legacySecret(ctx context.Context, ns, name, token string) (*corev1.Secret, error) {
	for _, rv := range []string{"0", ""} {
		obj, err := a.getter.GetObject(ctx, secretsGVR, ns, name, rv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			return nil, fmt.Errorf("secret %s/%s: unexpected %T", ns, name, obj)
		}
		if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(token)) == 1 {
			return secret, nil
		}
	}
	return nil, errors.New("token has been invalidated")
}

// get reads an object from the cache and, when the cache does not have it
// or has it with another uid than want (empty: any), with a consistent
// read: the cache may not yet have seen a pod created, or a Secret filled,
// a moment ago (upstream falls back from its informers to a live GET the
// same way).
func (a *Authenticator) get(ctx context.Context, gvr schema.GroupVersionResource, ns, name, want string) (metav1.Object, error) {
	obj, err := a.getter.GetObject(ctx, gvr, ns, name, "0")
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		m, merr := meta.Accessor(obj)
		if merr != nil {
			return nil, merr
		}
		if want == "" || string(m.GetUID()) == want {
			return m, nil
		}
	}
	if obj, err = a.getter.GetObject(ctx, gvr, ns, name, ""); err != nil {
		return nil, err
	}
	return meta.Accessor(obj)
}

// deletedAt reports whether obj's deletion started before t.
func deletedAt(obj metav1.Object, t time.Time) bool {
	ts := obj.GetDeletionTimestamp()
	return ts != nil && ts.Time.Before(t)
}
