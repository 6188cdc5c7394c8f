package bootstraptoken_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// reads its watch cache, Secrets are written through client-go.
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
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return &env{api: api, cs: cs}
}
