package serviceaccount_test

import (
	"context"
	"crypto"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
)

// FuzzAuthenticateToken feeds arbitrary strings to the token parser and
// validator: none may panic, and none but the untouched seed tokens may
// be accepted.
func FuzzAuthenticateToken(f *testing.F) {
	e := newEnv(f)
	ours, _ := testKeys(f)
	signer, _ := serviceaccount.NewSigner(issuer, ours)
	legacy, _ := serviceaccount.NewSigner(serviceaccount.LegacyIssuer, ours)
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{issuer}, Keys: []crypto.PublicKey{ours.Public()}, Legacy: true, Getter: e.api,
	})
	if err != nil {
		f.Fatal(err)
	}
	sa := e.serviceAccount(f, "robot")
	pod := e.pod(f, "p", "robot")
	valid := map[string]bool{}
	for _, b := range []serviceaccount.BoundToken{
		{ServiceAccount: sa, Pod: pod, Audiences: []string{issuer}, Expiration: time.Hour},
		{ServiceAccount: sa, Audiences: []string{issuer, "x"}, Expiration: time.Hour, WarnAfter: time.Now()},
	} {
		tok, _, err := signer.Sign(b, time.Now())
		if err != nil {
			f.Fatal(err)
		}
		valid[tok] = true
		f.Add(tok)
		parts := strings.Split(tok, ".")
		f.Add(parts[0] + "." + parts[1] + ".")
		f.Add(parts[0] + ".." + parts[2])
	}
	lt, _ := legacy.SignLegacy(sa, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "missing"}})
	f.Add(lt)
	for _, s := range []string{"", ".", "..", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJSUzI1NiJ9.e30.AAAA", `{"payload":"e30","signatures":[]}`} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := auth.AuthenticateToken(ctx, token, nil)
		if ok && (err != nil || resp == nil || resp.User == nil) {
			t.Fatalf("accepted with err %v, resp %v", err, resp)
		}
		if ok && !valid[token] {
			t.Fatalf("accepted a token no one signed: %q", token)
		}
	})
}
