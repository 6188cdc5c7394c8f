package serviceaccounttoken

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/pki"
)

const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func tokenSecret(name, sa, uid string, data map[string][]byte) *corev1.Secret {
	ann := map[string]string{corev1.ServiceAccountNameKey: sa}
	if uid != "" {
		ann[corev1.ServiceAccountUIDKey] = uid
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("secret-uid-" + name), Annotations: ann},
		Type: corev1.SecretTypeServiceAccountToken, Data: data}
}

func TestSync(t *testing.T) {
	dir := t.TempDir()
	key, err := pki.EnsureServiceAccountKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, pki.ServiceAccountKeyFile)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns", UID: "sa-uid"}}
	filled := map[string][]byte{"token": []byte("t"), "namespace": []byte("ns"), "ca.crt": []byte(ca)}
	tests := []struct {
		name      string
		objs      []runtime.Object
		wantGone  bool
		wantToken string // "" means a fresh legacy token for robot
	}{
		{name: "fills a new secret", objs: []runtime.Object{sa, tokenSecret("s", "robot", "", nil)}},
		{name: "leaves a filled secret", objs: []runtime.Object{sa, tokenSecret("s", "robot", "sa-uid", filled)}, wantToken: "t"},
		{name: "deletes when the account is gone", objs: []runtime.Object{tokenSecret("s", "robot", "sa-uid", filled)}, wantGone: true},
		{name: "deletes a secret of an earlier account", objs: []runtime.Object{sa, tokenSecret("s", "robot", "old-uid", filled)}, wantGone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			cc := &controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()}
			// The fake clientset's REST client cannot list, so the test
			// uses the shared Secret informer for the filtered one.
			c, err := newWith(cc, Options{KeyFile: keyFile, RootCA: []byte(ca)}, f.Core().V1().Secrets().Informer())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Queue.ShutDown)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer func() { cancel(); f.Shutdown() }()
			f.Start(ctx.Done())
			f.WaitForCacheSync(ctx.Done())
			if err := c.sync(ctx, "ns/robot"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
			if tc.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("secret kept: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Data["namespace"]) != "ns" || string(got.Data["ca.crt"]) != ca || got.Annotations[corev1.ServiceAccountUIDKey] != "sa-uid" {
				t.Fatalf("secret %v %v", got.Data, got.Annotations)
			}
			tok := string(got.Data["token"])
			if tc.wantToken != "" {
				if tok != tc.wantToken {
					t.Fatalf("token replaced: %q", tok)
				}
				return
			}
			// The token is the legacy token for robot and this secret.
			signer, _ := serviceaccount.NewSigner(serviceaccount.LegacyIssuer, key)
			want, _ := signer.SignLegacy(sa, got)
			if tok != want {
				t.Fatalf("token %q, want %q", tok, want)
			}
		})
	}
}

func TestNewNeedsKey(t *testing.T) {
	client := fake.NewClientset()
	cc := &controllerctx.Context{Client: client, Informers: informers.NewSharedInformerFactory(client, 0), Clock: clock.RealClock{}, Logger: slog.Default()}
	if _, err := New(cc, Options{}); err == nil {
		t.Fatal("New accepted no key")
	}
	if _, err := New(cc, Options{KeyFile: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("New accepted a missing key file")
	}
}
