package apiserver

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// testSigner is a ServiceAccount token signer for issuer and its key:
// ECDSA keeps the tests fast; the authenticator tests use RSA.
func testSigner(t testing.TB, issuer string) (*serviceaccount.Signer, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := serviceaccount.NewSigner(issuer, key)
	if err != nil {
		t.Fatal(err)
	}
	return signer, key
}

// TestTokenRequest issues tokens through serviceaccounts/token with
// client-go and checks them with the authenticator over the same server.
func TestTokenRequest(t *testing.T) {
	const issuer = "https://kubernetes.default.svc.cluster.local"
	signer, key := testSigner(t, issuer)
	e := newEnv(t, withConfig(func(c *Config) {
		c.ServiceAccounts = &ServiceAccountConfig{Signer: signer, MaxExpiration: 48 * time.Hour}
	}))
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: []string{issuer}, Keys: []crypto.PublicKey{key.Public()}, Getter: e.api,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sas := e.cs.CoreV1().ServiceAccounts("default")
	sa, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := e.cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{ServiceAccountName: "robot", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The ServiceAccount admission plugin runs with a signer: the pod got
	// its token volume, and a pod of a missing account is refused.
	if !hasTokenVolume(pod) {
		t.Errorf("pod has no kube-api-access volume: %+v", pod.Spec.Volumes)
	}
	_, err = e.cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: corev1.PodSpec{ServiceAccountName: "ghost", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "error looking up service account default/ghost") {
		t.Fatalf("pod of a missing account: %v", err)
	}

	tests := []struct {
		name     string
		sa       string
		spec     authenticationv1.TokenRequestSpec
		meta     metav1.ObjectMeta
		wantErr  func(error) bool
		wantSecs int64
		check    func(t *testing.T, u *request.User)
	}{
		{name: "defaults", sa: "robot", wantSecs: 3600},
		{name: "audience and duration", sa: "robot", spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: ptr(int64(7200))}, wantSecs: 7200},
		{name: "capped by max expiration", sa: "robot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(100 * 3600))}, wantSecs: 48 * 3600},
		{name: "bound to pod", sa: "robot", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}}, wantSecs: 3600,
			check: func(t *testing.T, u *request.User) {
				if u.Extra[serviceaccount.ExtraPodUID][0] != string(pod.UID) {
					t.Errorf("extra %v", u.Extra)
				}
			}},
		{name: "too short", sa: "robot", spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(599))}, wantErr: apierrors.IsInvalid},
		{name: "no such account", sa: "ghost", wantErr: apierrors.IsNotFound},
		{name: "no such pod", sa: "robot", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "ghost"}}, wantErr: apierrors.IsNotFound},
		{name: "pod of another account", sa: "other", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}}, wantErr: apierrors.IsBadRequest},
		{name: "pod uid mismatch", sa: "robot", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "nope"}}, wantErr: apierrors.IsConflict},
		{name: "unbindable kind", sa: "robot", spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "x"}}, wantErr: apierrors.IsBadRequest},
		{name: "name mismatch", sa: "robot", meta: metav1.ObjectMeta{Name: "other"}, wantErr: apierrors.IsInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().Truncate(time.Second)
			out, err := sas.CreateToken(ctx, tt.sa, &authenticationv1.TokenRequest{ObjectMeta: tt.meta, Spec: tt.spec}, metav1.CreateOptions{})
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			exp := out.Status.ExpirationTimestamp.Time
			if d := exp.Sub(before); d < time.Duration(tt.wantSecs)*time.Second || d > time.Duration(tt.wantSecs+2)*time.Second {
				t.Errorf("expires in %v, want %ds", d, tt.wantSecs)
			}
			auds := tt.spec.Audiences
			resp, ok, err := auth.AuthenticateToken(ctx, out.Status.Token, auds)
			if !ok {
				t.Fatalf("issued token refused: %v", err)
			}
			if resp.User.Name != "system:serviceaccount:default:robot" || resp.User.UID != string(sa.UID) {
				t.Fatalf("user %+v", resp.User)
			}
			if tt.check != nil {
				tt.check(t, resp.User)
			}
		})
	}

	// The kubelet's projected-volume request is extended to a year with
	// warnafter at the requested hour; the status says the hour.
	out, err := sas.CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr(int64(3607)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(out.Status.ExpirationTimestamp.Time); d > 3608*time.Second || d < 3500*time.Second {
		t.Errorf("extended token's status expiry in %v, want the requested 3607s", d)
	}
	if !strings.Contains(decodePayload(t, out.Status.Token), `"warnafter"`) {
		t.Error("extended token has no warnafter")
	}
}

// decodePayload is a JWT's claims as JSON, unverified.
func decodePayload(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hasTokenVolume(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			return true
		}
	}
	return false
}
