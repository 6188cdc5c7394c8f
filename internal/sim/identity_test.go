package sim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestImpersonateNodes(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	denied := new(atomic.Uint64)
	client := &http.Client{Transport: impersonateNodes{next: http.DefaultTransport, denied: denied}}

	tests := []struct {
		name      string
		ctx       context.Context
		wantUser  string
		wantGroup string
	}{
		{"node request", withNodeIdentity(context.Background(), newNodeHeaders("hollow-node-7", 0)), "system:node:hollow-node-7", "system:nodes"},
		{"simulator's own request", context.Background(), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(tt.ctx, http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := <-got
			if u, g := h.Get("Impersonate-User"), h.Get("Impersonate-Group"); u != tt.wantUser || g != tt.wantGroup {
				t.Errorf("Impersonate-User %q, -Group %q; want %q, %q", u, g, tt.wantUser, tt.wantGroup)
			}
			if req.Header.Get("Impersonate-User") != "" {
				t.Error("the caller's request was modified")
			}
		})
	}
	// Only the node's 403 counts: the simulator's own request is not a
	// node's.
	if n := denied.Load(); n != 1 {
		t.Errorf("denied = %d, want 1", n)
	}
}
