package etcd

import (
	"strings"
	"testing"
)

func testLayout(t testing.TB) *KeyLayout {
	t.Helper()
	l, err := UpstreamKeyLayout([]string{
		"/core/pods", "/core/nodes", "/core/services", "/core/endpoints",
		"/core/replicationcontrollers", "/core/events", "/apps/deployments",
		"/networking.k8s.io/ingresses", "/apiregistration.k8s.io/apiservices",
		"/apiextensions.k8s.io/customresourcedefinitions", "/coordination.k8s.io/leases",
	})
	if err != nil {
		t.Fatalf("UpstreamKeyLayout: %v", err)
	}
	return l
}

func TestKeyLayoutTranslation(t *testing.T) {
	l := testLayout(t)
	cases := []struct{ myriad, etcd string }{
		{"/core/pods/default/p1", "/pods/default/p1"},
		{"/core/nodes/n1", "/minions/n1"},
		{"/core/services/default/kubernetes", "/services/specs/default/kubernetes"},
		{"/core/endpoints/default/kubernetes", "/services/endpoints/default/kubernetes"},
		{"/core/replicationcontrollers/ns/rc", "/controllers/ns/rc"},
		{"/core/events/ns/e.1", "/events/ns/e.1"},
		{"/apps/deployments/ns/d", "/deployments/ns/d"},
		{"/networking.k8s.io/ingresses/ns/i", "/ingress/ns/i"},
		{"/coordination.k8s.io/leases/kube-node-lease/n1", "/leases/kube-node-lease/n1"},
		// Group-qualified upstream too: unchanged.
		{"/apiregistration.k8s.io/apiservices/v1.apps", "/apiregistration.k8s.io/apiservices/v1.apps"},
		{"/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", "/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"},
		// Custom resources: unchanged.
		{"/example.com/widgets/ns/w", "/example.com/widgets/ns/w"},
		{"/example.com/widgets/cluster-scoped", "/example.com/widgets/cluster-scoped"},
		// A namespace named like an upstream prefix stays put.
		{"/core/pods/specs/p", "/pods/specs/p"},
		// Whole resource prefixes.
		{"/core/nodes", "/minions"},
		{"/core/services", "/services/specs"},
	}
	for _, tc := range cases {
		got, ok := l.ToEtcd(tc.myriad)
		if !ok || got != tc.etcd {
			t.Errorf("ToEtcd(%q) = %q, %v; want %q", tc.myriad, got, ok, tc.etcd)
		}
		if back := l.FromEtcd(tc.etcd); back != tc.myriad {
			t.Errorf("FromEtcd(%q) = %q, want %q", tc.etcd, back, tc.myriad)
		}
	}
}

func TestKeyLayoutRefusesAmbiguousKeys(t *testing.T) {
	l := testLayout(t)
	// Each would be stored unchanged and read back as a built-in's key.
	for _, k := range []string{"/minions/n1", "/pods/ns/p", "/services/specs/ns/s", "/deployments/x/y"} {
		if got, ok := l.ToEtcd(k); ok {
			t.Errorf("ToEtcd(%q) = %q, ok; want refused", k, got)
		}
	}
}

func TestKeyLayoutPrefixes(t *testing.T) {
	l := testLayout(t)
	cases := []struct {
		prefix, etcd string
		exact        bool
	}{
		{"/core/pods/", "/pods/", true},
		{"/core/pods/ns1/", "/pods/ns1/", true},
		{"/core/services/", "/services/specs/", true},
		{"/example.com/widgets/", "/example.com/widgets/", true},
		{"/core/pods", "", false}, // also matches "/core/podsX/"
		{"/core/", "", false},
		{"/", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		got, exact := l.PrefixToEtcd(tc.prefix)
		if got != tc.etcd || exact != tc.exact {
			t.Errorf("PrefixToEtcd(%q) = %q, %v; want %q, %v", tc.prefix, got, exact, tc.etcd, tc.exact)
		}
	}
	var nilLayout *KeyLayout
	if got, exact := nilLayout.PrefixToEtcd("/core/"); got != "/core/" || !exact {
		t.Errorf("nil layout PrefixToEtcd = %q, %v", got, exact)
	}
}

func TestNewKeyLayoutValidation(t *testing.T) {
	cases := []struct {
		name  string
		table map[string]string
		want  string
	}{
		{"two onto one", map[string]string{"/core/a": "/x", "/core/b": "/x"}, "both map to"},
		{"prefix of another", map[string]string{"/core/a": "/x", "/core/b": "/x/y"}, "is a prefix of"},
		{"bad source", map[string]string{"/core": "/x"}, "is not /<group>/<resource>"},
		{"bad target", map[string]string{"/core/a": "/x/y/z"}, "one or two segments"},
		{"empty target", map[string]string{"/core/a": ""}, "one or two segments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewKeyLayout(tc.table)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewKeyLayout = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := UpstreamKeyLayout([]string{"pods"}); err == nil {
		t.Fatal("UpstreamKeyLayout accepted a prefix without a group")
	}
}

// FuzzKeyLayout: translating any key the layout accepts and back gives
// the key again, and the translation of a key under a resource prefix lies
// under that prefix's translation (so lists and watches see it).
func FuzzKeyLayout(f *testing.F) {
	for _, s := range []string{"/core/pods/ns/p", "/core/nodes/n", "/services/specs/x", "/core/services", "/a", "", "/", "//", "/core//x", "/example.com/w/x", "/minions"} {
		f.Add(s)
	}
	l := testLayout(f)
	f.Fuzz(func(t *testing.T, key string) {
		ek, ok := l.ToEtcd(key)
		if !ok {
			return
		}
		if back := l.FromEtcd(ek); back != key {
			t.Fatalf("ToEtcd(%q) = %q reads back as %q", key, ek, back)
		}
		if rp, rest := resourcePrefixOf(key); rp != "" && rest != "" {
			p := rp + "/"
			ep, exact := l.PrefixToEtcd(p)
			if exact && !strings.HasPrefix(ek, ep) {
				t.Fatalf("key %q → %q is outside its prefix %q → %q", key, ek, p, ep)
			}
		}
	})
}

// BenchmarkKeyTranslation is the layout's cost per request: one key to
// etcd and one back.
func BenchmarkKeyTranslation(b *testing.B) {
	s := &Store{prefix: "/registry", layout: testLayout(b)}
	b.ReportAllocs()
	for b.Loop() {
		ek, err := s.etcdKey("/core/services/default/kubernetes")
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := s.myriadKey([]byte(ek)); !ok {
			b.Fatal("not translated back")
		}
	}
}
