package tokencache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// counting accepts "good*" tokens for the audiences nil and ["a"], refuses
// "bad" with an error, and counts how often it is asked.
type counting struct{ calls atomic.Int64 }

func (c *counting) AuthenticateToken(_ context.Context, token string, auds []string) (*authn.TokenResponse, bool, error) {
	c.calls.Add(1)
	switch {
	case token == "bad":
		return nil, false, errors.New("expired")
	case len(token) >= 4 && token[:4] == "good" && (auds == nil || (len(auds) == 1 && auds[0] == "a")):
		return &authn.TokenResponse{User: &request.User{Name: token}}, true, nil
	}
	return nil, false, nil
}

func TestCache(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Now())
	next := &counting{}
	c := New(next, Config{Clock: clock, MaxEntries: 8})
	ctx := context.Background()
	ask := func(token string, auds []string, wantOK bool, wantCalls int64) {
		t.Helper()
		_, ok, _ := c.AuthenticateToken(ctx, token, auds)
		if ok != wantOK || next.calls.Load() != wantCalls {
			t.Fatalf("%q %v: ok %v after %d calls, want %v after %d", token, auds, ok, next.calls.Load(), wantOK, wantCalls)
		}
	}
	ask("good", nil, true, 1)
	ask("good", nil, true, 1)            // cached
	ask("good", []string{"a"}, true, 2)  // another audience: asked
	ask("good", []string{"b"}, false, 3) // refused, not cached
	ask("good", []string{"b"}, false, 4) // refused again
	ask("bad", nil, false, 5)            // errors are not cached
	ask("bad", nil, false, 6)
	clock.SetTime(clock.Now().Add(DefaultTTL))
	ask("good", nil, true, 7) // expired: asked again
	for i := range 20 {
		ask(fmt.Sprintf("good-%d", i), nil, true, int64(8+i))
	}
	c.mu.Lock()
	n := len(c.mu.entries)
	c.mu.Unlock()
	if n > 8 {
		t.Fatalf("%d entries, bound 8", n)
	}
}

func BenchmarkCachedHit(b *testing.B) {
	c := New(&counting{}, Config{})
	ctx := context.Background()
	token := "good-eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.payload-of-a-few-hundred-bytes.signature-of-three-hundred-and-forty-bytes"
	c.AuthenticateToken(ctx, token, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := c.AuthenticateToken(ctx, token, nil); !ok {
			b.Fatal("refused")
		}
	}
}
