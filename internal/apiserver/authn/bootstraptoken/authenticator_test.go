package bootstraptoken_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/bootstraptoken"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// now is the fake clock's start; expirations are relative to it.
var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// tokenSecret is a valid bootstrap token Secret for id.secret, changed by
// mutate.
func tokenSecret(id, secret string, mutate func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + id, Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte("system:bootstrappers:myriad:default-node-token"),
			bootstrapapi.BootstrapTokenExpirationKey:       []byte(now.Add(time.Hour).Format(time.RFC3339)),
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func set(key, value string) func(*corev1.Secret) {
	return func(s *corev1.Secret) { s.Data[key] = []byte(value) }
}

func drop(key string) func(*corev1.Secret) {
	return func(s *corev1.Secret) { delete(s.Data, key) }
}

// start runs an authenticator over e's Secrets with clk until the test ends.
func start(t testing.TB, e *env, clk *clocktesting.FakeClock) *bootstraptoken.Authenticator {
	t.Helper()
	lw, err := e.api.ListerWatcher(secretsGVR)
	if err != nil {
		t.Fatal(err)
	}
	a, err := bootstraptoken.New(lw, bootstraptoken.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); !a.HasSynced(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("authenticator never synced")
		}
	}
	return a
}

// eventually polls authenticate(token) until its verdict is want.
func eventually(t *testing.T, a *bootstraptoken.Authenticator, token string, want bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, ok, err := a.AuthenticateToken(context.Background(), token, nil)
		if err != nil {
			t.Fatalf("AuthenticateToken(%q): %v", token, err)
		}
		if ok == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("AuthenticateToken(%q) = %v, want %v", token, ok, want)
		}
	}
}

func TestAuthenticateToken(t *testing.T) {
	e := newEnv(t)
	clk := clocktesting.NewFakeClock(now)
	a := start(t, e, clk)
	ctx := context.Background()

	cases := []struct {
		name   string
		secret *corev1.Secret // nil: none created
		token  string
		groups []string // nil: refused
	}{
		{"valid", tokenSecret("abcdef", "0123456789abcdef", nil), "abcdef.0123456789abcdef",
			[]string{"system:bootstrappers", "system:bootstrappers:myriad:default-node-token", "system:authenticated"}},
		{"no extra groups, no expiration", tokenSecret("noextr", "0123456789abcdef", func(s *corev1.Secret) {
			delete(s.Data, bootstrapapi.BootstrapTokenExtraGroupsKey)
			delete(s.Data, bootstrapapi.BootstrapTokenExpirationKey)
		}), "noextr.0123456789abcdef", []string{"system:bootstrappers", "system:authenticated"}},
		{"wrong secret", tokenSecret("wrongs", "0123456789abcdef", nil), "wrongs.0123456789abcdeg", nil},
		{"expired", tokenSecret("expird", "0123456789abcdef", set(bootstrapapi.BootstrapTokenExpirationKey, now.Add(-time.Second).Format(time.RFC3339))), "expird.0123456789abcdef", nil},
		{"unparseable expiration", tokenSecret("badexp", "0123456789abcdef", set(bootstrapapi.BootstrapTokenExpirationKey, "tomorrow")), "badexp.0123456789abcdef", nil},
		{"missing usage", tokenSecret("nousag", "0123456789abcdef", drop(bootstrapapi.BootstrapTokenUsageAuthentication)), "nousag.0123456789abcdef", nil},
		{"usage false", tokenSecret("usagef", "0123456789abcdef", set(bootstrapapi.BootstrapTokenUsageAuthentication, "false")), "usagef.0123456789abcdef", nil},
		{"token-id differs from the name", tokenSecret("idmism", "0123456789abcdef", set(bootstrapapi.BootstrapTokenIDKey, "other1")), "idmism.0123456789abcdef", nil},
		{"invalid extra group", tokenSecret("badgrp", "0123456789abcdef", set(bootstrapapi.BootstrapTokenExtraGroupsKey, "system:masters")), "badgrp.0123456789abcdef", nil},
		{"opaque type", tokenSecret("opaque", "0123456789abcdef", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), "opaque.0123456789abcdef", nil},
		{"other namespace", tokenSecret("othern", "0123456789abcdef", func(s *corev1.Secret) { s.Namespace = metav1.NamespaceDefault }), "othern.0123456789abcdef", nil},
		{"no secret", nil, "absent.0123456789abcdef", nil},
		{"upper case", nil, "ABCDEF.0123456789abcdef", nil},
		{"short secret", nil, "abcdef.0123456789abcde", nil},
		{"no dot", nil, "abcdef0123456789abcdef", nil},
		{"a JWT", nil, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", nil},
		{"empty", nil, "", nil},
	}
	for _, tc := range cases {
		if tc.secret == nil {
			continue
		}
		if _, err := e.cs.CoreV1().Secrets(tc.secret.Namespace).Create(ctx, tc.secret, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	// The last Secret created is valid: once it authenticates, the
	// informer has seen every earlier one.
	sentinel := tokenSecret("zzzzzz", "0123456789abcdef", nil)
	if _, err := e.cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, a, "zzzzzz.0123456789abcdef", true)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := a.AuthenticateToken(ctx, tc.token, []string{"https://kubernetes.default.svc"})
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if ok != (tc.groups != nil) {
				t.Fatalf("accepted = %v, want %v", ok, tc.groups != nil)
			}
			if !ok {
				return
			}
			id := tc.token[:6]
			if resp.User.Name != "system:bootstrap:"+id || !slices.Equal(resp.User.Groups, tc.groups) {
				t.Errorf("user %+v, want system:bootstrap:%s in %v", resp.User, id, tc.groups)
			}
			if resp.User.UID != "" || resp.Audiences != nil {
				t.Errorf("response %+v: bootstrap tokens have no uid and no audiences", resp)
			}
		})
	}

	t.Run("expires at once", func(t *testing.T) {
		clk.SetTime(now.Add(time.Hour - time.Nanosecond))
		eventually(t, a, "abcdef.0123456789abcdef", true)
		clk.SetTime(now.Add(time.Hour))
		if _, ok, _ := a.AuthenticateToken(ctx, "abcdef.0123456789abcdef", nil); ok {
			t.Error("a token at its expiration instant was accepted")
		}
		clk.SetTime(now)
	})
	t.Run("secret changed", func(t *testing.T) {
		s, err := e.cs.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data[bootstrapapi.BootstrapTokenSecretKey] = []byte("fedcba9876543210")
		if _, err := e.cs.CoreV1().Secrets(metav1.NamespaceSystem).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, a, "abcdef.fedcba9876543210", true)
		eventually(t, a, "abcdef.0123456789abcdef", false)
	})
	t.Run("deleted", func(t *testing.T) {
		eventually(t, a, "zzzzzz.0123456789abcdef", true)
		if err := e.cs.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, "bootstrap-token-zzzzzz", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, a, "zzzzzz.0123456789abcdef", false)
	})
}
