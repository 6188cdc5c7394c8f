package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestProbe records, for requests to exactly path (no query), when the
// handler returned and whether the request context had ended by then.
type requestProbe struct {
	path string
	done chan error // the request context's Err() when the handler returned
}

func (p *requestProbe) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Deferred: a handler may end a response it cannot finish with
		// panic(http.ErrAbortHandler).
		defer func() {
			if r.URL.Path == p.path && r.URL.RawQuery == "" {
				select {
				case p.done <- r.Context().Err():
				default:
				}
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// seedConfigMaps writes n ConfigMaps of about size bytes straight through
// the object store, concurrently so the store's group commit batches them.
func seedConfigMaps(t *testing.T, e *testEnv, ns string, n, size int) {
	t.Helper()
	h := e.api.handlers[schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}]
	payload := strings.Repeat("x", size)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cm := testConfigMap(fmt.Sprintf("big-%05d", i), nil)
			cm.Namespace = ns
			cm.Data = map[string]string{"payload": payload}
			if _, err := h.objects.create(ctx, ns, cm.Name, cm); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestListClientDisconnect: a client that stops reading a large list and
// disconnects makes the server stop: the handler returns promptly with the
// request context ended, and no goroutine is left behind.
func TestListClientDisconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20k objects")
	}
	const path = "/api/v1/namespaces/default/configmaps"
	probe := &requestProbe{path: path, done: make(chan error, 1)}
	e := newEnv(t, withHandler(probe.wrap))
	const n = 20000
	seedConfigMaps(t, e, "default", n, 2048)
	// The list below is consistent (no resourceVersion): the cache waits
	// for the store's current revision, so it sees every seeded object.
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	baseline := runtime.NumGoroutine()

	resp, err := client.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	// A slow reader: a little of a ~45 MB answer, then hang up.
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()

	select {
	case ctxErr := <-probe.done:
		if ctxErr == nil {
			t.Fatal("the list handler finished without noticing the client had gone")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the list handler still runs 20s after the client disconnected")
	}
	waitFor(t, 20*time.Second, "goroutines back to the baseline", func() bool {
		return runtime.NumGoroutine() <= baseline
	})
}
