package filters

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

func TestPanicRecovery(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	t.Run("panic before writing becomes a 500 Status", func(t *testing.T) {
		logs.Reset()
		h := WithPanicRecovery(logger)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") }))
		decodeStatus(t, serve(h, httptest.NewRequest("GET", "/api/v1/pods", nil)), http.StatusInternalServerError, metav1.StatusReasonInternalError)
		if !strings.Contains(logs.String(), "kaboom") || !strings.Contains(logs.String(), "recover_test.go") {
			t.Fatalf("log lacks panic value or stack: %s", logs.String())
		}
	})

	t.Run("panic after writing aborts the response", func(t *testing.T) {
		h := WithPanicRecovery(logger)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("partial"))
			panic("kaboom")
		}))
		if p := catch(func() { serve(h, httptest.NewRequest("GET", "/", nil)) }); p != http.ErrAbortHandler {
			t.Fatalf("panic %v, want http.ErrAbortHandler", p)
		}
	})

	t.Run("ErrAbortHandler passes through unlogged", func(t *testing.T) {
		logs.Reset()
		h := WithPanicRecovery(logger)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
		if p := catch(func() { serve(h, httptest.NewRequest("GET", "/", nil)) }); p != http.ErrAbortHandler {
			t.Fatalf("panic %v, want http.ErrAbortHandler", p)
		}
		if logs.Len() != 0 {
			t.Fatalf("logged: %s", logs.String())
		}
	})

	t.Run("over a real connection the server survives", func(t *testing.T) {
		srv := httptest.NewServer(WithPanicRecovery(logger)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/panic" {
				panic("kaboom")
			}
		})))
		defer srv.Close()
		for _, p := range []string{"/panic", "/ok"} {
			resp, err := http.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[string]int{"/panic": 500, "/ok": 200}[p]; resp.StatusCode != want {
				t.Fatalf("%s: %d, want %d", p, resp.StatusCode, want)
			}
		}
	})
}

func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

func TestLogging(t *testing.T) {
	var logs bytes.Buffer
	debug := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		NoteUser(r.Context(), &request.User{Name: "alice"})
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("12345"))
	}), WithRequestInfo, WithLogging(debug))
	serve(h, httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods", nil))
	for _, want := range []string{"status=201", "bytes=5", "verb=create", "user=alice", "path=/api/v1/namespaces/ns/pods"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}

	logs.Reset()
	info := slog.New(slog.NewTextHandler(&logs, nil))
	serve(Chain(okHandler, WithLogging(info)), httptest.NewRequest("GET", "/", nil))
	if logs.Len() != 0 {
		t.Fatalf("logged at info level: %s", logs.String())
	}
}
