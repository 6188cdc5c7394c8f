package flowcontrol

import (
	"strings"
	"testing"
)

// FuzzParseUserAgentRules: any ConfigMap value parses into a rule or an
// error, never a panic, and a parsed rule has a non-empty prefix and a
// limit of -1 (reject) or more.
func FuzzParseUserAgentRules(f *testing.F) {
	for _, seed := range []string{"reject buggy/", "4 chatty/", "", " ", "reject", "-1 x", "99999999999 x", "reject  spaced  prefix ", "\t3\tx"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		rules, errs := parseUserAgentRules(map[string]string{"r": v})
		if len(rules)+len(errs) != 1 {
			t.Fatalf("%q: %d rules, %d errors", v, len(rules), len(errs))
		}
		for _, r := range rules {
			if strings.TrimSpace(r.prefix) == "" || r.limit.Load() < -1 {
				t.Fatalf("%q: rule %q limit %d", v, r.prefix, r.limit.Load())
			}
		}
	})
}
