package sim

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestNodeTokensRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	names := NodeNames(Config{Nodes: 3, NamePrefix: "n-", FirstIndex: 5})
	if err := WriteNodeTokens(&buf, names); err != nil {
		t.Fatal(err)
	}
	// Other identities in the same file are skipped.
	buf.WriteString("admintoken,alice,alice-uid,\"devs,admins\"\n# a comment\n")
	got, err := ReadNodeTokens(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["n-5"] == "" || got["n-7"] == "" || got["n-5"] == got["n-6"] {
		t.Fatalf("tokens = %v", got)
	}
}

func TestReadNodeTokensRejects(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"too few fields", "tok,system:node:a\n", "want token,user,uid"},
		{"empty token", ",system:node:a,uid\n", "empty token"},
		{"empty node name", "tok,system:node:,uid\n", "empty token or node name"},
		{"duplicate node", "t1,system:node:a,u\nt2,system:node:a,u\n", "second token for node a"},
		{"bad quoting", "t1,\"system:node:a,u\n", "node token file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadNodeTokens(strings.NewReader(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestTokenIdentityRouting(t *testing.T) {
	type seen struct{ via, auth string }
	got := make(chan seen, 1)
	handler := func(via string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- seen{via, r.Header.Get("Authorization")}
			w.WriteHeader(http.StatusUnauthorized)
		})
	}
	self, node := httptest.NewServer(handler("self")), httptest.NewServer(handler("node"))
	defer self.Close()
	defer node.Close()
	denied := new(atomic.Uint64)
	// Each side's transport rewrites the URL to its own server, standing
	// in for the two connection pools (with and without the simulator's
	// credentials).
	client := &http.Client{Transport: byIdentity{
		self: redirect{self.URL},
		node: nodeTokens{next: redirect{node.URL}, denied: denied},
	}}
	tests := []struct {
		name     string
		ctx      context.Context
		want     seen
		inDenied uint64
	}{
		{"node request carries its token", withNodeIdentity(context.Background(), newNodeTokenHeaders("secret-7", 0)), seen{"node", "Bearer secret-7"}, 1},
		{"simulator's own request", context.Background(), seen{"self", ""}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(tt.ctx, http.MethodGet, "http://api.invalid/api/v1/nodes", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if s := <-got; s != tt.want {
				t.Errorf("got %+v, want %+v", s, tt.want)
			}
			if req.Header.Get("Authorization") != "" {
				t.Error("the caller's request was modified")
			}
			if n := denied.Load(); n != tt.inDenied {
				t.Errorf("denied = %d, want %d", n, tt.inDenied)
			}
		})
	}
}

// redirect sends every request to base's host.
type redirect struct{ base string }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(r.base, "http://")
	out.Host = out.URL.Host
	return http.DefaultTransport.RoundTrip(out)
}
