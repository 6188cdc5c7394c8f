package authn

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

func TestParseTokenFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]*request.User
		err  bool
	}{
		{"upstream's example", "31ada4fd-adec-460c-809a-9e56ceb75269,alice,1001,\"group1,group2,group3\"\n",
			map[string]*request.User{"31ada4fd-adec-460c-809a-9e56ceb75269": {Name: "alice", UID: "1001", Groups: []string{"group1", "group2", "group3"}}}, false},
		{"three columns", "t,bob,2\n", map[string]*request.User{"t": {Name: "bob", UID: "2"}}, false},
		{"empty token skipped", ",bob,2\nt2,carol,3\n", map[string]*request.User{"t2": {Name: "carol", UID: "3"}}, false},
		{"later duplicate wins", "t,bob,2\nt,carol,3\n", map[string]*request.User{"t": {Name: "carol", UID: "3"}}, false},
		{"extra columns ignored", "t,bob,2,g,more\n", map[string]*request.User{"t": {Name: "bob", UID: "2", Groups: []string{"g"}}}, false},
		{"empty file", "", map[string]*request.User{}, false},
		{"two columns", "t,bob\n", nil, true},
		{"unterminated quote", "t,bob,2,\"g\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTokenFile(strings.NewReader(tt.in))
			if (err != nil) != tt.err {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				if !errors.Is(err, ErrTokenFile) {
					t.Fatalf("err %v is not ErrTokenFile", err)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzParseTokenFile checks that no input crashes the parser, errors are
// ErrTokenFile, and every parsed token authenticates as its user.
func FuzzParseTokenFile(f *testing.F) {
	f.Add("31ada4fd-adec-460c-809a-9e56ceb75269,alice,1001,\"group1,group2\"\n")
	f.Add("t,bob,2\n,x,y\n")
	f.Add("t,\"b\"\"ob\",2\n")
	f.Add("a,b\n")
	f.Add("\"")
	f.Fuzz(func(t *testing.T, in string) {
		tokens, err := ParseTokenFile(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrTokenFile) {
				t.Fatalf("error %v is not ErrTokenFile", err)
			}
			return
		}
		st := NewStaticTokens(tokens)
		for tok, u := range tokens {
			if tok == "" {
				t.Fatal("empty token parsed")
			}
			resp, ok, err := st.AuthenticateToken(t.Context(), tok, nil)
			if !ok || err != nil || resp.User.Name != u.Name || resp.User.UID != u.UID {
				t.Fatalf("token %q: ok=%v err=%v", tok, ok, err)
			}
		}
	})
}
