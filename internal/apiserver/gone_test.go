package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestCompactedRevisionsAreGone: once the store's history before a revision
// is compacted away and the caches restart without it, every read that
// needs that history gets upstream's 410 Expired answer: a watch from an
// old resourceVersion, an Exact list at one, and a continue token whose
// snapshot is gone. client-go re-lists on exactly these.
func TestCompactedRevisionsAreGone(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := e.cs.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.Continue == "" {
		t.Fatalf("first page: continue %q, %v", page.Continue, err)
	}
	cur := first
	for i := 0; i < 5; i++ {
		cur.Data = map[string]string{"i": strings.Repeat("x", i)}
		if cur, err = cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := e.store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	e.stopServer()
	e.startServer()
	cms = e.cs.CoreV1().ConfigMaps("default")

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err == nil {
		// Upstream answers 200 and a single ERROR event.
		select {
		case ev := <-w.ResultChan():
			st, ok := ev.Object.(*metav1.Status)
			if ev.Type != watch.Error || !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
				t.Fatalf("watch from compacted rv %s: %s %+v, want an ERROR event with 410 Expired", first.ResourceVersion, ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatal("no event on a watch from a compacted revision")
		}
		w.Stop()
	} else if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from compacted rv: %v, want 410", err)
	}

	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("Exact list at a compacted rv: %v, want 410 Expired", err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continue from a compacted snapshot: %v, want 410 Expired", err)
	}
	// A watch from the current revision is fine.
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.ResourceVersion})
	if err != nil {
		t.Fatalf("watch from the current rv: %v", err)
	}
	w.Stop()
}

// blockingListStore holds the caches' initial list until release is
// closed: every list, or with only set, lists of that prefix.
type blockingListStore struct {
	storage.Store
	release chan struct{}
	only    string
}

func (s *blockingListStore) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	if s.only != "" && prefix != s.only {
		return s.Store.List(ctx, prefix)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	return s.Store.List(ctx, prefix)
}

// TestNotReadyUntilCachesSync: /readyz fails and reads answer 503 while the
// caches have not listed the store; /livez does not depend on them.
func TestNotReadyUntilCachesSync(t *testing.T) {
	e := newEnv(t) // an open store with the default namespace in it
	e.stopServer()
	blocked := &blockingListStore{Store: e.store, release: make(chan struct{})}
	api, err := New(Config{Store: blocked, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	// Start waits for the services cache (ClusterIP allocations) and
	// bootstraps through the caches: it cannot return before the release.
	go func() { started <- api.Start(context.Background()) }()
	t.Cleanup(api.Stop)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/readyz"); code != http.StatusInternalServerError {
		t.Fatalf("/readyz before the caches synced: %d, want 500", code)
	}
	if code := get("/livez"); code != http.StatusOK {
		t.Fatalf("/livez before the caches synced: %d, want 200", code)
	}
	if code := get("/api/v1/namespaces/default"); code != http.StatusTooManyRequests {
		t.Fatalf("GET before the caches synced: %d, want 429 (upstream's storage is (re)initializing)", code)
	}
	close(blocked.release)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "caches ready", api.Ready)
	if code := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after the caches synced: %d, want 200", code)
	}
	if code := get("/api/v1/namespaces/default"); code != http.StatusOK {
		t.Fatalf("GET after the caches synced: %d, want 200", code)
	}
}

// TestStartWaitsOutSlowCaches: on a fresh store whose namespaces cache
// takes longer to fill than a read waits for it (3 s, then 429), Start
// still bootstraps (its writes pass NamespaceLifecycle admission, which
// reads namespaces from their cache) instead of failing the server's
// start, as it did at 50,000 pods on a loaded machine.
func TestStartWaitsOutSlowCaches(t *testing.T) {
	st, err := embedded.Open(context.Background(), embedded.Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	blocked := &blockingListStore{Store: st, release: make(chan struct{}), only: "/core/namespaces/"}
	api, err := New(Config{Store: blocked, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- api.Start(context.Background()) }()
	t.Cleanup(api.Stop)
	select {
	case err := <-started:
		t.Fatalf("Start returned before the namespaces cache could fill: %v", err)
	case <-time.After(3500 * time.Millisecond):
	}
	close(blocked.release)
	if err := <-started; err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitFor(t, 30*time.Second, "caches ready", api.Ready)
}
