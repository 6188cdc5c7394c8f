package tokencleaner

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

func TestSync(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		expiration string // "" none
		typ        corev1.SecretType
		deleted    bool
		requeue    bool
	}{
		{"expired", now.Add(-time.Second).Format(time.RFC3339), bootstrapapi.SecretTypeBootstrapToken, true, false},
		{"expires now", now.Format(time.RFC3339), bootstrapapi.SecretTypeBootstrapToken, true, false},
		{"unparseable expiration", "soon", bootstrapapi.SecretTypeBootstrapToken, true, false},
		{"expires later", now.Add(time.Hour).Format(time.RFC3339), bootstrapapi.SecretTypeBootstrapToken, false, true},
		{"no expiration", "", bootstrapapi.SecretTypeBootstrapToken, false, false},
		{"not a bootstrap token", now.Add(-time.Hour).Format(time.RFC3339), corev1.SecretTypeOpaque, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef", Namespace: "kube-system", UID: "u1"},
				Type: tc.typ, Data: map[string][]byte{bootstrapapi.BootstrapTokenIDKey: []byte("abcdef")}}
			if tc.expiration != "" {
				s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(tc.expiration)
			}
			cs := fake.NewClientset(s)
			f := informers.NewSharedInformerFactory(cs, 0)
			c, err := newWith(&controllerctx.Context{Client: cs, Informers: f, Clock: clocktesting.NewFakeClock(now), Logger: slog.Default()},
				f.Core().V1().Secrets().Informer())
			if err != nil {
				t.Fatal(err)
			}
			defer c.ShutDown()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			f.Start(ctx.Done())
			defer f.Shutdown()
			defer cancel()
			f.WaitForCacheSync(ctx.Done())
			err = c.sync(ctx, "kube-system/bootstrap-token-abcdef")
			if tc.requeue != errors.Is(err, reconcile.ErrRequeue) || (!tc.requeue && err != nil) {
				t.Fatalf("sync: %v, requeue wanted: %v", err, tc.requeue)
			}
			if tc.requeue && err.Error() != reconcile.RequeueAfter(time.Hour).Error() {
				t.Errorf("sync: %v, want a requeue at the expiration, in 1h", err)
			}
			_, err = cs.CoreV1().Secrets("kube-system").Get(ctx, s.Name, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Errorf("deleted = %v (%v), want %v", gone, err, tc.deleted)
			}
		})
	}
}
