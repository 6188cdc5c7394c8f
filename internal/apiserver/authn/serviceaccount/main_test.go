package serviceaccount_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestMain fails the package if a test leaves goroutines running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// env is a real API server over a real embedded store: the authenticator
// reads through its watch caches, objects are written through client-go.
type env struct {
	api *apiserver.Server
	cs  kubernetes.Interface
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := embedded.Open(ctx, embedded.Options{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	api, err := apiserver.New(apiserver.Config{Store: st, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	for deadline := time.Now().Add(30 * time.Second); !api.Ready(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("caches not ready")
		}
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &env{api: api, cs: cs} // the server creates namespace default itself
}

func (e *env) serviceAccount(t testing.TB, name string) *corev1.ServiceAccount {
	t.Helper()
	sa, err := e.cs.CoreV1().ServiceAccounts("default").Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

func (e *env) pod(t testing.TB, name, sa string) *corev1.Pod {
	t.Helper()
	pod, err := e.cs.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

var (
	keyOnce sync.Once
	keys    [2]*rsa.PrivateKey
)

// testKeys are two RSA keys shared by the tests (generating one costs
// tens of milliseconds): the server's and a stranger's.
func testKeys(t testing.TB) (ours, theirs crypto.Signer) {
	keyOnce.Do(func() {
		for i := range keys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keys[i] = k
		}
	})
	return keys[0], keys[1]
}
