package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Signer signs ServiceAccount tokens with one private key for one issuer.
// Safe for concurrent use.
type Signer struct {
	issuer string
	signer jose.Signer
}

// NewSigner signs tokens with key (RSA: RS256; ECDSA: ES256/384/512 by
// curve) under issuer: the --service-account-issuer for bound tokens,
// LegacyIssuer for Secret-based ones. The header carries the key id
// upstream derives from the public key, so verifiers holding several keys
// (after a rotation) pick the right one.
func NewSigner(issuer string, key crypto.Signer) (*Signer, error) {
	if issuer == "" {
		return nil, errors.New("serviceaccount: the issuer is required")
	}
	alg, err := algorithmFor(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	return &Signer{issuer: issuer, signer: s}, nil
}

// Issuer is the iss of the tokens s signs.
func (s *Signer) Issuer() string { return s.issuer }

// BoundToken describes a token to issue for a ServiceAccount, bound to at
// most one of Pod, Secret and Node (a pod-bound token also names the
// pod's Node when given, as upstream's ServiceAccountTokenPodNodeInfo).
type BoundToken struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	Secret         *corev1.Secret
	Node           *corev1.Node
	Audiences      []string
	// Expiration is the token's lifetime from now.
	Expiration time.Duration
	// WarnAfter, when not zero, is put in kubernetes.io.warnafter: the
	// time after which a use of the token is stale (upstream's extended
	// tokens for projected volumes).
	WarnAfter time.Time
}

// Sign issues a bound token at now and returns it with its expiry.
func (s *Signer) Sign(t BoundToken, now time.Time) (string, time.Time, error) {
	sa := t.ServiceAccount
	if sa == nil {
		return "", time.Time{}, errors.New("serviceaccount: no ServiceAccount to issue a token for")
	}
	if t.Secret != nil && (t.Pod != nil || t.Node != nil) {
		return "", time.Time{}, errors.New("serviceaccount: a token can be bound to one object only")
	}
	now = now.Truncate(time.Second)
	exp := now.Add(t.Expiration)
	public := jwt.Claims{
		Issuer:    s.issuer,
		Subject:   Username(sa.Namespace, sa.Name),
		Audience:  jwt.Audience(t.Audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(exp),
		ID:        string(uuid.NewUUID()),
	}
	k := kubernetesClaims{Namespace: sa.Namespace, Svcacct: ref{Name: sa.Name, UID: string(sa.UID)}}
	switch {
	case t.Pod != nil:
		k.Pod = &ref{Name: t.Pod.Name, UID: string(t.Pod.UID)}
		if t.Node != nil {
			k.Node = &ref{Name: t.Node.Name, UID: string(t.Node.UID)}
		}
	case t.Secret != nil:
		k.Secret = &ref{Name: t.Secret.Name, UID: string(t.Secret.UID)}
	case t.Node != nil:
		k.Node = &ref{Name: t.Node.Name, UID: string(t.Node.UID)}
	}
	if !t.WarnAfter.IsZero() {
		k.WarnAfter = jwt.NewNumericDate(t.WarnAfter)
	}
	token, err := jwt.Signed(s.signer).Claims(public).Claims(privateClaims{Kubernetes: k}).Serialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("serviceaccount: signing: %w", err)
	}
	return token, exp, nil
}

// SignLegacy issues the never-expiring token stored in a
// kubernetes.io/service-account-token Secret for sa. Sign with a Signer
// whose issuer is LegacyIssuer.
func (s *Signer) SignLegacy(sa *corev1.ServiceAccount, secret *corev1.Secret) (string, error) {
	public := jwt.Claims{Issuer: s.issuer, Subject: Username(sa.Namespace, sa.Name)}
	private := legacyClaims{
		Namespace: sa.Namespace, ServiceAccountName: sa.Name, ServiceAccountUID: string(sa.UID), SecretName: secret.Name,
	}
	token, err := jwt.Signed(s.signer).Claims(public).Claims(private).Serialize()
	if err != nil {
		return "", fmt.Errorf("serviceaccount: signing: %w", err)
	}
	return token, nil
}

// KeyID is upstream's key id for a public key: the unpadded base64url
// SHA-256 of its PKIX DER encoding.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("serviceaccount: key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// algorithmFor is the one JWS algorithm tokens signed by pub's private key
// use; verification accepts only that one for the key, so a token cannot
// pick its own (alg "none", or HS256 keyed with the public key).
func algorithmFor(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("serviceaccount: unsupported ECDSA curve %s", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("serviceaccount: unsupported key type %T", pub)
}
