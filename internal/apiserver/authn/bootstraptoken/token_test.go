package bootstraptoken

import (
	"testing"

	bootstraptokenutil "k8s.io/cluster-bootstrap/util/tokens"
)

func TestParseToken(t *testing.T) {
	cases := []struct {
		token      string
		id, secret string
		ok         bool
	}{
		{"abcdef.0123456789abcdef", "abcdef", "0123456789abcdef", true},
		{"000000.zzzzzzzzzzzzzzzz", "000000", "zzzzzzzzzzzzzzzz", true},
		{"abcdef:0123456789abcdef", "", "", false},
		{"Abcdef.0123456789abcdef", "", "", false},
		{"abcdef.0123456789abcdeF", "", "", false},
		{"abcde.0123456789abcdefg", "", "", false},
		{"abcdef.0123456789abcdef\n", "", "", false},
		{"abcdef..123456789abcdef", "", "", false},
		{"", "", "", false},
	}
	for _, tc := range cases {
		id, secret, ok := ParseToken(tc.token)
		if id != tc.id || secret != tc.secret || ok != tc.ok {
			t.Errorf("ParseToken(%q) = %q, %q, %v; want %q, %q, %v", tc.token, id, secret, ok, tc.id, tc.secret, tc.ok)
		}
	}
}

// FuzzParseToken checks ParseToken against cluster-bootstrap's regular
// expression: the same tokens, split the same way.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"abcdef.0123456789abcdef", "abcdef.0123456789abcdeF", "abcdef.0123456789abcde\u00e9", "a.b", "", "abcdef.0123456789abcdef\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, ok := ParseToken(s)
		wantID, wantSecret, err := bootstraptokenutil.ParseToken(s)
		if ok != (err == nil) || id != wantID || secret != wantSecret {
			t.Fatalf("ParseToken(%q) = %q, %q, %v; cluster-bootstrap: %q, %q, %v", s, id, secret, ok, wantID, wantSecret, err)
		}
	})
}
