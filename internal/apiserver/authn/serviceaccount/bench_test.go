package serviceaccount_test

import (
	"context"
	"crypto"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
)

// BenchmarkAuthenticatePodBoundToken is the per-request cost of a bound
// token: parse, RS256 verification, claim checks, and the ServiceAccount
// and pod lookups in the real watch caches.
func BenchmarkAuthenticatePodBoundToken(b *testing.B) {
	e := newEnv(b)
	ours, _ := testKeys(b)
	signer, _ := serviceaccount.NewSigner(issuer, ours)
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{issuer}, Keys: []crypto.PublicKey{ours.Public()}, Getter: e.api,
	})
	if err != nil {
		b.Fatal(err)
	}
	sa := e.serviceAccount(b, "robot")
	pod := e.pod(b, "p", "robot")
	tok, _, err := signer.Sign(serviceaccount.BoundToken{ServiceAccount: sa, Pod: pod, Audiences: []string{issuer}, Expiration: time.Hour}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := auth.AuthenticateToken(ctx, tok, nil); !ok {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok, err := auth.AuthenticateToken(ctx, tok, nil); !ok {
			b.Fatal(err)
		}
	}
}
