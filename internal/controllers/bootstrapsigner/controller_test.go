package bootstrapsigner

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

const content = "apiVersion: v1\nkind: Config\nclusters: []\n"

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func token(id, secret string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{"token-id": []byte(id), "token-secret": []byte(secret), "usage-bootstrap-signing": []byte("true")}}
	for k, v := range data {
		if v == "" {
			delete(s.Data, k)
		} else {
			s.Data[k] = []byte(v)
		}
	}
	return s
}

func TestSync(t *testing.T) {
	sig := func(id, secret string) string {
		s, err := jws.ComputeDetachedSignature(content, id, secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		name    string
		secrets []*corev1.Secret
		old     map[string]string // signatures already in the ConfigMap
		want    map[string]string
		requeue time.Duration
	}{
		{"signs", []*corev1.Secret{token("abcdef", "0123456789abcdef", nil)}, nil,
			map[string]string{"jws-kubeconfig-abcdef": sig("abcdef", "0123456789abcdef")}, 0},
		{"two tokens, one expiring", []*corev1.Secret{
			token("abcdef", "0123456789abcdef", nil),
			token("ghijkl", "0123456789abcdef", map[string]string{"expiration": now.Add(time.Minute).Format(time.RFC3339)}),
		}, nil, map[string]string{"jws-kubeconfig-abcdef": sig("abcdef", "0123456789abcdef"), "jws-kubeconfig-ghijkl": sig("ghijkl", "0123456789abcdef")}, time.Minute},
		{"expired, not for signing, mismatched id", []*corev1.Secret{
			token("expird", "0123456789abcdef", map[string]string{"expiration": now.Add(-time.Minute).Format(time.RFC3339)}),
			token("nosign", "0123456789abcdef", map[string]string{"usage-bootstrap-signing": ""}),
			token("badid1", "0123456789abcdef", map[string]string{"token-id": "other1"}),
		}, map[string]string{"jws-kubeconfig-expird": "stale", "jws-kubeconfig-gone12": "stale"}, map[string]string{}, 0},
		{"up to date", []*corev1.Secret{token("abcdef", "0123456789abcdef", nil)},
			map[string]string{"jws-kubeconfig-abcdef": sig("abcdef", "0123456789abcdef")},
			map[string]string{"jws-kubeconfig-abcdef": sig("abcdef", "0123456789abcdef")}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public", ResourceVersion: "1"},
				Data: map[string]string{"kubeconfig": content, "other": "kept"}}
			maps.Copy(cm.Data, tc.old)
			objs := []runtime.Object{cm}
			for _, s := range tc.secrets {
				objs = append(objs, s)
			}
			cs := fake.NewClientset(objs...)
			f := informers.NewSharedInformerFactory(cs, 0)
			c, err := newWith(&controllerctx.Context{Client: cs, Informers: f, Clock: clocktesting.NewFakeClock(now), Logger: slog.Default()},
				f.Core().V1().Secrets().Informer(), f.Core().V1().ConfigMaps().Informer())
			if err != nil {
				t.Fatal(err)
			}
			defer c.ShutDown()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			f.Start(ctx.Done())
			defer f.Shutdown()
			defer cancel()
			f.WaitForCacheSync(ctx.Done())
			err = c.sync(ctx, key)
			if tc.requeue > 0 {
				if !errors.Is(err, reconcile.ErrRequeue) || err.Error() != reconcile.RequeueAfter(tc.requeue).Error() {
					t.Fatalf("sync: %v, want a requeue in %v", err, tc.requeue)
				}
			} else if err != nil {
				t.Fatalf("sync: %v", err)
			}
			got, err := cs.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"kubeconfig": content, "other": "kept"}
			maps.Copy(want, tc.want)
			if !maps.Equal(got.Data, want) {
				t.Errorf("data %v, want %v", got.Data, want)
			}
			for id, s := range tc.want {
				if !jws.DetachedTokenIsValid(s, content, id[len("jws-kubeconfig-"):], "0123456789abcdef") {
					t.Errorf("%s does not verify", id)
				}
			}
			updates := 0
			for _, a := range cs.Actions() {
				if a.GetVerb() == "update" {
					updates++
				}
			}
			if changed := !maps.Equal(tc.old, tc.want) && !(len(tc.old) == 0 && len(tc.want) == 0); (updates > 0) != changed {
				t.Errorf("%d updates, want an update only on a change", updates)
			}
		})
	}
}
