package filters

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// untouchable is a request body that fails the test if anything reads it.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("body was read")
	return 0, io.EOF
}

// readAllHandler reads the body as a real handler would and answers 413 via
// WriteStatusError when the limit cuts it off.
var readAllHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if !IsRequestBodyTooLarge(err) || !errors.As(err, &mbe) {
			panic("unexpected error " + err.Error())
		}
		WriteStatusError(w, err)
		return
	}
	w.Write([]byte(strings.ToUpper(string(data[:min(len(data), 8)]))))
})

func TestBodyLimit(t *testing.T) {
	const limit = 1024
	h := WithBodyLimit(limit)(readAllHandler)

	t.Run("Content-Length over the limit is refused unread", func(t *testing.T) {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", untouchable{t})
		r.ContentLength = limit + 1
		s := decodeStatus(t, serve(h, r), http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		if !strings.Contains(s.Message, "limit is 1024") {
			t.Errorf("message %q", s.Message)
		}
	})

	tests := []struct {
		name          string
		size          int
		contentLength int64 // -1: unknown, as with chunked encoding
		code          int
	}{
		{"known length at the limit", limit, limit, http.StatusOK},
		{"unknown length at the limit", limit, -1, http.StatusOK},
		{"unknown length over the limit", limit + 1, -1, http.StatusRequestEntityTooLarge},
		{"unknown length far over the limit", 100 * limit, -1, http.StatusRequestEntityTooLarge},
		{"empty", 0, 0, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("PUT", "/api/v1/namespaces/ns/configmaps/c", io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("x"), tt.size))))
			r.ContentLength = tt.contentLength
			w := serve(h, r)
			if tt.code == http.StatusRequestEntityTooLarge {
				s := decodeStatus(t, w, tt.code, metav1.StatusReasonRequestEntityTooLarge)
				if s.Message != "Request entity too large: limit is 1024" {
					t.Errorf("message %q", s.Message)
				}
				return
			}
			if w.Code != tt.code {
				t.Fatalf("code %d, want %d", w.Code, tt.code)
			}
		})
	}
}

// TestBodyLimitOverHTTP checks the real-server path: a chunked upload past
// the limit is answered 413 and the default limit is upstream's 3 MiB.
func TestBodyLimitOverHTTP(t *testing.T) {
	srv := httptest.NewServer(WithBodyLimit(0)(readAllHandler))
	defer srv.Close()
	tests := []struct {
		name string
		body io.Reader
		code int
	}{
		// io.MultiReader hides the length, so the client sends chunked.
		{"chunked under 3 MiB", io.MultiReader(bytes.NewReader(make([]byte, 3<<20))), http.StatusOK},
		{"chunked over 3 MiB", io.MultiReader(bytes.NewReader(make([]byte, 3<<20+1))), http.StatusRequestEntityTooLarge},
		{"declared over 3 MiB", bytes.NewReader(make([]byte, 3<<20+1)), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/api/v1/namespaces/ns/configmaps", "application/json", tt.body)
			if err != nil {
				// The server may close the connection before the client
				// finished sending an oversized body.
				if tt.code == http.StatusRequestEntityTooLarge {
					return
				}
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Fatalf("code %d, want %d", resp.StatusCode, tt.code)
			}
		})
	}
}
