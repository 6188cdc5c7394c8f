package etcd

import (
	"fmt"
	"sort"
	"strings"
)

// KeyLayout translates between Myriad's storage keys and the keys upstream
// Kubernetes writes to etcd (below the configured prefix, which the store
// adds and strips itself).
//
// Myriad keys every resource as "/<group or core>/<resource>/[ns/]name".
// Upstream keys built-in resources as "/<resource>/[ns/]name", with a few
// historical names (nodes are "minions", services "services/specs"), and
// custom resources and the aggregator's and apiextensions' own objects as
// "/<group>/<resource>/...", which is Myriad's key unchanged. So the layout
// is a table from Myriad resource prefixes to upstream ones; a key whose
// resource is not in it is stored unchanged. The table is a bijection
// (checked when it is built), so a key read back from etcd translates to
// exactly one Myriad key.
//
// A nil *KeyLayout is the identity. A KeyLayout is immutable and safe for
// concurrent use.
type KeyLayout struct {
	// toEtcd maps a Myriad resource prefix ("/core/nodes") to upstream's
	// ("/minions").
	toEtcd map[string]string
	// fromEtcd is the inverse of toEtcd.
	fromEtcd map[string]string
}

// upstreamSpecialPrefixes are upstream's SpecialDefaultResourcePrefixes
// (pkg/kubeapiserver/default_storage_factory_builder.go), by Myriad
// resource prefix.
var upstreamSpecialPrefixes = map[string]string{
	"/core/replicationcontrollers": "/controllers",
	"/core/endpoints":              "/services/endpoints",
	"/core/nodes":                  "/minions",
	"/core/services":               "/services/specs",
	"/extensions/ingresses":        "/ingress",
	"/networking.k8s.io/ingresses": "/ingress",
}

// upstreamGroupQualified are the groups upstream stores as
// "/<group>/<resource>" although they are compiled in: kube-apiserver's
// aggregator and apiextensions servers use the SimpleStorageFactory, whose
// ResourcePrefix is group + "/" + resource.
var upstreamGroupQualified = map[string]bool{
	"apiregistration.k8s.io": true,
	"apiextensions.k8s.io":   true,
}

// UpstreamKeyLayout returns upstream's layout for the built-in resources
// whose Myriad storage prefixes ("/<group or core>/<resource>", the
// registry's StorageKeyPrefix values) are given. Custom resources are not
// listed: upstream and Myriad key them alike. Prefixes that share storage
// upstream (core and events.k8s.io events) must share one prefix here too.
func UpstreamKeyLayout(builtinPrefixes []string) (*KeyLayout, error) {
	table := map[string]string{}
	for _, p := range builtinPrefixes {
		group, resource, ok := splitResourcePrefix(p)
		if !ok {
			return nil, fmt.Errorf("etcd: key layout: %q is not /<group>/<resource>", p)
		}
		switch {
		case upstreamSpecialPrefixes[p] != "":
			table[p] = upstreamSpecialPrefixes[p]
		case upstreamGroupQualified[group]:
			// Same key in both layouts; no entry needed.
		default:
			table[p] = "/" + resource
		}
	}
	return NewKeyLayout(table)
}

// NewKeyLayout builds a layout from a table of Myriad resource prefixes to
// etcd ones (each "/a/b" or "/a"). It rejects tables whose translation
// would not be reversible.
func NewKeyLayout(table map[string]string) (*KeyLayout, error) {
	l := &KeyLayout{toEtcd: map[string]string{}, fromEtcd: map[string]string{}}
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, from := range keys {
		to := table[from]
		if _, _, ok := splitResourcePrefix(from); !ok {
			return nil, fmt.Errorf("etcd: key layout: %q is not /<group>/<resource>", from)
		}
		if n := segments(to); n < 1 || n > 2 {
			return nil, fmt.Errorf("etcd: key layout: %q → %q: the etcd prefix needs one or two segments", from, to)
		}
		if from == to {
			continue
		}
		if prev, dup := l.fromEtcd[to]; dup {
			return nil, fmt.Errorf("etcd: key layout: %q and %q both map to %q", prev, from, to)
		}
		l.toEtcd[from] = to
		l.fromEtcd[to] = from
	}
	// A one-segment etcd prefix must not begin a two-segment one, or
	// "/services/specs/x" could be read as "/services" + "/specs/x".
	for to, from := range l.fromEtcd {
		for other, otherFrom := range l.fromEtcd {
			if other != to && strings.HasPrefix(other, to+"/") {
				return nil, fmt.Errorf("etcd: key layout: %q (from %q) is a prefix of %q (from %q)", to, from, other, otherFrom)
			}
		}
	}
	return l, nil
}

// ToEtcd translates a Myriad key to its etcd key (below the store prefix).
// ok is false for a key the layout cannot store reversibly: an unmapped key
// that reads back as another resource's key ("/minions/x" would come back
// as "/core/nodes/x").
func (l *KeyLayout) ToEtcd(key string) (string, bool) {
	if l == nil {
		return key, true
	}
	if rp, rest := resourcePrefixOf(key); rp != "" {
		if to, ok := l.toEtcd[rp]; ok {
			return to + rest, true
		}
	}
	if l.FromEtcd(key) != key {
		return "", false
	}
	return key, true
}

// FromEtcd translates an etcd key (below the store prefix) back to the
// Myriad key.
func (l *KeyLayout) FromEtcd(key string) string {
	if l == nil || len(l.fromEtcd) == 0 || !strings.HasPrefix(key, "/") {
		return key
	}
	// Two segments first: "/services/specs" before a one-segment prefix.
	if rp, rest := resourcePrefixOf(key); rp != "" {
		if from, ok := l.fromEtcd[rp]; ok {
			return from + rest
		}
	}
	seg, rest := key, ""
	if i := strings.IndexByte(key[1:], '/'); i >= 0 {
		seg, rest = key[:i+1], key[i+1:]
	}
	if from, ok := l.fromEtcd[seg]; ok {
		return from + rest
	}
	return key
}

// PrefixToEtcd translates a Myriad key prefix to the etcd prefix to read.
// exact is false when the Myriad prefix does not name one resource
// completely ("/core/", "/", "/core/pods" without the slash, which also
// matches "/core/podsX/"): the etcd prefix is then "" (everything below the
// store prefix) and the caller filters the translated keys.
func (l *KeyLayout) PrefixToEtcd(prefix string) (etcdPrefix string, exact bool) {
	if l == nil || len(l.fromEtcd) == 0 {
		return prefix, true
	}
	if rp, rest := resourcePrefixOf(prefix); rp != "" && rest != "" {
		if k, ok := l.ToEtcd(prefix); ok {
			return k, true
		}
	}
	return "", false
}

// resourcePrefixOf splits "/g/r/rest" into "/g/r" and "/rest". It returns
// "" when key has fewer than two complete segments followed by a slash or
// the end ("/g/r" itself yields "/g/r", "").
func resourcePrefixOf(key string) (rp, rest string) {
	if !strings.HasPrefix(key, "/") {
		return "", ""
	}
	i := strings.IndexByte(key[1:], '/')
	if i < 1 {
		return "", ""
	}
	i++ // index of the second slash
	j := strings.IndexByte(key[i+1:], '/')
	if j < 0 {
		if i+1 == len(key) {
			return "", "" // "/g/"
		}
		return key, ""
	}
	if j == 0 {
		return "", "" // "/g//..."
	}
	j += i + 1
	return key[:j], key[j:]
}

func splitResourcePrefix(p string) (group, resource string, ok bool) {
	rp, rest := resourcePrefixOf(p)
	if rp == "" || rest != "" {
		return "", "", false
	}
	parts := strings.SplitN(p[1:], "/", 2)
	return parts[0], parts[1], true
}

func segments(p string) int {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		return 0
	}
	return strings.Count(p, "/")
}
