package serviceaccount_test

import (
	"context"
	"crypto"
	"encoding/base64"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
)

const issuer = "https://kubernetes.default.svc.cluster.local"

func TestAuthenticateToken(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ours, theirs := testKeys(t)
	signer, err := serviceaccount.NewSigner(issuer, ours)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := serviceaccount.NewSigner(issuer, theirs)
	otherIssuer, _ := serviceaccount.NewSigner("https://elsewhere.example", ours)
	legacySigner, _ := serviceaccount.NewSigner(serviceaccount.LegacyIssuer, ours)
	now := time.Now()
	clock := clocktesting.NewFakePassiveClock(now)
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{issuer}, Keys: []crypto.PublicKey{ours.Public()}, Legacy: true, Getter: e.api, Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}

	sa := e.serviceAccount(t, "robot")
	pod := e.pod(t, "p", "robot")
	sign := func(s *serviceaccount.Signer, b serviceaccount.BoundToken, at time.Time) string {
		t.Helper()
		if b.ServiceAccount == nil {
			b.ServiceAccount = sa
		}
		if b.Audiences == nil {
			b.Audiences = []string{issuer}
		}
		if b.Expiration == 0 {
			b.Expiration = time.Hour
		}
		tok, _, err := s.Sign(b, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := sign(signer, serviceaccount.BoundToken{Pod: pod}, now)

	// Objects whose deletion the table's cases depend on, each its own.
	gone := e.serviceAccount(t, "gone")
	goneTok := sign(signer, serviceaccount.BoundToken{ServiceAccount: gone}, now)
	recreated := e.serviceAccount(t, "recreated")
	recreatedTok := sign(signer, serviceaccount.BoundToken{ServiceAccount: recreated}, now)
	deadPod := e.pod(t, "dead", "robot")
	deadPodTok := sign(signer, serviceaccount.BoundToken{Pod: deadPod}, now)
	node, err := e.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeTok := sign(signer, serviceaccount.BoundToken{Node: node}, now)
	secret, err := e.cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secretTok := sign(signer, serviceaccount.BoundToken{Secret: secret}, now)

	legacySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Namespace: "default",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}}, Type: corev1.SecretTypeServiceAccountToken}
	legacyTok, err := legacySigner.SignLegacy(sa, legacySecret)
	if err != nil {
		t.Fatal(err)
	}
	legacySecret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(legacyTok)}
	if _, err := e.cs.CoreV1().Secrets("default").Create(ctx, legacySecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphanSecret := legacySecret.DeepCopy()
	orphanSecret.Name, orphanSecret.ResourceVersion = "orphan-token", ""
	orphanTok, _ := legacySigner.SignLegacy(sa, orphanSecret)
	orphanSecret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(orphanTok)}
	if _, err := e.cs.CoreV1().Secrets("default").Create(ctx, orphanSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A legacy token for a secret holding another token.
	forgedLegacy, _ := legacySigner.SignLegacy(sa, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}})

	// Deletions and a recreation, after the tokens were issued.
	del := func(f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	del(func() error {
		return e.cs.CoreV1().ServiceAccounts("default").Delete(ctx, "gone", metav1.DeleteOptions{})
	})
	del(func() error {
		return e.cs.CoreV1().ServiceAccounts("default").Delete(ctx, "recreated", metav1.DeleteOptions{})
	})
	e.serviceAccount(t, "recreated")
	del(func() error { return e.cs.CoreV1().Pods("default").Delete(ctx, "dead", metav1.DeleteOptions{}) })
	del(func() error { return e.cs.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}) })
	del(func() error { return e.cs.CoreV1().Secrets("default").Delete(ctx, "s", metav1.DeleteOptions{}) })
	del(func() error {
		return e.cs.CoreV1().Secrets("default").Delete(ctx, "orphan-token", metav1.DeleteOptions{})
	})

	parts := strings.Split(valid, ".")
	tamperedSig := parts[0] + "." + parts[1] + "." + flip(parts[2])
	tamperedPayload := parts[0] + "." + flip(parts[1]) + "." + parts[2]
	algNone := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."

	tests := []struct {
		name      string
		token     string
		audiences []string
		at        time.Time
		ok        bool
		err       string // substring; "" means no error
	}{
		{name: "valid pod-bound", token: valid, ok: true},
		{name: "expired", token: valid, at: now.Add(time.Hour + 2*time.Minute), err: "expired"},
		{name: "within leeway after expiry", token: valid, at: now.Add(time.Hour + 30*time.Second), ok: true},
		{name: "not yet valid", token: sign(signer, serviceaccount.BoundToken{Pod: pod}, now.Add(10*time.Minute)), err: "not valid yet"},
		{name: "wrong issuer is someone else's", token: sign(otherIssuer, serviceaccount.BoundToken{}, now)},
		{name: "wrong audience", token: sign(signer, serviceaccount.BoundToken{Audiences: []string{"vault"}}, now), err: "audiences"},
		{name: "requested audience", token: sign(signer, serviceaccount.BoundToken{Audiences: []string{"vault"}}, now), audiences: []string{"vault"}, ok: true},
		{name: "tampered signature", token: tamperedSig, err: "invalid signature"},
		{name: "tampered payload", token: tamperedPayload},
		{name: "alg none", token: algNone},
		{name: "another key", token: sign(stranger, serviceaccount.BoundToken{Pod: pod}, now), err: "invalid signature"},
		{name: "not a JWT", token: "abcdef"},
		{name: "ServiceAccount deleted", token: goneTok, err: "not found"},
		{name: "ServiceAccount recreated", token: recreatedTok, err: "does not match claim"},
		{name: "bound pod deleted", token: deadPodTok, err: "invalidated"},
		{name: "bound node deleted", token: nodeTok, err: "invalidated"},
		{name: "bound secret deleted", token: secretTok, err: "invalidated"},
		{name: "legacy", token: legacyTok, ok: true},
		{name: "legacy secret deleted", token: orphanTok, err: "invalidated"},
		{name: "legacy token not the secret's", token: forgedLegacy, err: "invalidated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := tt.at
			if at.IsZero() {
				at = now
			}
			clock.SetTime(at)
			resp, ok, err := auth.AuthenticateToken(ctx, tt.token, tt.audiences)
			if ok != tt.ok {
				t.Fatalf("ok = %v (err %v), want %v", ok, err, tt.ok)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
			if ok && (resp.User.Name != "system:serviceaccount:default:robot" || resp.User.UID != string(sa.UID) ||
				!slices.Equal(resp.User.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:default"})) {
				t.Fatalf("user %+v", resp.User)
			}
		})
	}

	clock.SetTime(now)
	resp, _, err := auth.AuthenticateToken(ctx, valid, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := resp.User.Extra
	if x[serviceaccount.ExtraPodName][0] != "p" || x[serviceaccount.ExtraPodUID][0] != string(pod.UID) ||
		!strings.HasPrefix(x[serviceaccount.ExtraCredentialID][0], "JTI=") || !slices.Equal(resp.Audiences, []string{issuer}) {
		t.Fatalf("extra %v audiences %v", x, resp.Audiences)
	}
}

// TestPodCreatedAMomentAgo: a token bound to a pod the cache has not seen
// yet is accepted (the authenticator falls back to a consistent read).
func TestPodCreatedAMomentAgo(t *testing.T) {
	e := newEnv(t)
	ours, _ := testKeys(t)
	signer, _ := serviceaccount.NewSigner(issuer, ours)
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{issuer}, Keys: []crypto.PublicKey{ours.Public()}, Getter: e.api,
	})
	if err != nil {
		t.Fatal(err)
	}
	sa := e.serviceAccount(t, "robot")
	for i := range 20 {
		pod := e.pod(t, "p"+string(rune('a'+i)), "robot")
		tok, _, err := signer.Sign(serviceaccount.BoundToken{ServiceAccount: sa, Pod: pod, Audiences: []string{issuer}, Expiration: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := auth.AuthenticateToken(context.Background(), tok, nil); !ok {
			t.Fatalf("token for a pod just created refused: %v", err)
		}
	}
}

func TestClaims(t *testing.T) {
	ours, _ := testKeys(t)
	signer, _ := serviceaccount.NewSigner(issuer, ours)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns", UID: "sa-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}}
	now := time.Unix(1_800_000_000, 0)
	tok, exp, err := signer.Sign(serviceaccount.BoundToken{ServiceAccount: sa, Pod: pod, Node: node, Audiences: []string{"a", "b"},
		Expiration: 3607 * time.Second, WarnAfter: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(now.Add(3607 * time.Second)) {
		t.Fatalf("expiry %v", exp)
	}
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := parsed.Claims(ours.Public(), &claims); err != nil {
		t.Fatal(err)
	}
	kid, _ := serviceaccount.KeyID(ours.Public())
	if parsed.Headers[0].KeyID != kid {
		t.Errorf("kid %q, want %q", parsed.Headers[0].KeyID, kid)
	}
	want := map[string]any{
		"iss": issuer, "sub": "system:serviceaccount:ns:robot", "aud": []any{"a", "b"},
		"iat": float64(now.Unix()), "nbf": float64(now.Unix()), "exp": float64(now.Unix() + 3607),
		"kubernetes.io": map[string]any{
			"namespace":      "ns",
			"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "p", "uid": "pod-uid"},
			"node":           map[string]any{"name": "n", "uid": "node-uid"},
			"warnafter":      float64(now.Unix() + 3600),
		},
	}
	jti, _ := claims["jti"].(string)
	delete(claims, "jti")
	if len(jti) != 36 || !reflect.DeepEqual(claims, want) {
		t.Fatalf("claims %v (jti %q), want %v", claims, jti, want)
	}
	if _, _, err := signer.Sign(serviceaccount.BoundToken{ServiceAccount: sa, Pod: pod, Secret: &corev1.Secret{}}, now); err == nil {
		t.Fatal("a token bound to a pod and a secret was issued")
	}
}

// flip changes one character in the middle of a base64url segment.
func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
