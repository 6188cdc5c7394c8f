package bootstraptoken_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkAuthenticateToken is the per-request cost of a bootstrap token
// with 1,000 tokens in the cluster: accepted, refused for a wrong secret,
// and a bearer token of another kind passing through.
func BenchmarkAuthenticateToken(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	for i := range 1000 {
		s := tokenSecret(fmt.Sprintf("t%05d", i), "0123456789abcdef", nil)
		if _, err := e.cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	a := start(b, e, clocktesting.NewFakeClock(now))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, _ := a.AuthenticateToken(ctx, "t00999.0123456789abcdef", nil); ok {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("tokens never loaded")
		}
	}
	for _, bc := range []struct{ name, token string }{
		{"valid", "t00500.0123456789abcdef"},
		{"wrong-secret", "t00500.0123456789abcdee"},
		{"not-bootstrap", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _, _ = a.AuthenticateToken(ctx, bc.token, nil)
				}
			})
		})
	}
}
