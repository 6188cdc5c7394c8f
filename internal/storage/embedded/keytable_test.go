package embedded

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestKeyTableBasics(t *testing.T) {
	kt := newKeyTable()
	long := "/" + strings.Repeat("k", maxRefLen)
	for _, tc := range []struct {
		key string
		m   keyMeta
	}{
		{"/a", keyMeta{mod: 5, create: 3}},
		{"", keyMeta{mod: 1, create: 1}},
		{"/other", keyMeta{mod: 2, create: 2}},
		{long, keyMeta{mod: 9, create: 9}},
	} {
		if _, ok := kt.Get(tc.key); ok {
			t.Fatalf("%.10q present before Set", tc.key)
		}
		kt.Set(tc.key, tc.m)
		if got, ok := kt.Get(tc.key); !ok || got != tc.m {
			t.Fatalf("Get(%.10q) = %+v, %v; want %+v", tc.key, got, ok, tc.m)
		}
	}
	if kt.Len() != 4 {
		t.Fatalf("Len = %d, want 4", kt.Len())
	}
	kt.Set("/a", keyMeta{mod: 6, create: 3})
	kt.Delete(long)
	kt.Delete("/missing")
	if got, _ := kt.Get("/a"); got.mod != 6 || kt.Len() != 3 {
		t.Fatalf("after update and deletes: /a %+v, Len %d", got, kt.Len())
	}
	if _, ok := kt.Get(long); ok {
		t.Fatal("deleted long key still present")
	}
}

// TestKeyTableSetBytes checks that the table keeps no reference to a key
// set from a buffer: overwriting the buffer changes nothing stored.
func TestKeyTableSetBytes(t *testing.T) {
	kt := newKeyTable()
	buf := []byte("/registry/pods/ns/pod-a")
	kt.setBytes(buf, keyMeta{mod: 1, create: 1})
	long := []byte("/" + strings.Repeat("k", maxRefLen))
	kt.setBytes(long, keyMeta{mod: 2, create: 2})
	copy(buf[len(buf)-1:], "b")
	long[1] = 'x'
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"/registry/pods/ns/pod-a", true},
		{"/registry/pods/ns/pod-b", false},
		{"/" + strings.Repeat("k", maxRefLen), true},
		{string(long), false},
	} {
		if _, ok := kt.Get(tc.key); ok != tc.want {
			t.Errorf("Get(%.30q) present %v, want %v", tc.key, ok, tc.want)
		}
	}
}

// TestKeyTableAgainstMap runs a random mix of sets and deletes against the
// table and a map, with enough churn to grow the table, fill it with
// tombstones and rebuild it several times, and checks they agree.
func TestKeyTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kt := newKeyTable()
	want := map[string]keyMeta{}
	key := func() string {
		return fmt.Sprintf("/registry/pods/ns-%d/pod-%d", rng.IntN(20), rng.IntN(5000))
	}
	for i := range 200_000 {
		k := key()
		switch rng.IntN(3) {
		case 0, 1:
			m := keyMeta{mod: int64(i), create: int64(i / 2)}
			kt.Set(k, m)
			want[k] = m
		case 2:
			kt.Delete(k)
			delete(want, k)
		}
		if i%20_000 == 0 || i == 199_999 {
			if kt.Len() != len(want) {
				t.Fatalf("op %d: Len %d, want %d", i, kt.Len(), len(want))
			}
			for k, m := range want {
				if got, ok := kt.Get(k); !ok || got != m {
					t.Fatalf("op %d: Get(%q) = %+v, %v; want %+v", i, k, got, ok, m)
				}
			}
			for range 1000 {
				k := key()
				_, ok := kt.Get(k)
				if _, w := want[k]; ok != w {
					t.Fatalf("op %d: Get(%q) present %v, want %v", i, k, ok, w)
				}
			}
		}
	}
	if kt.live+kt.tombs > len(kt.slots)*3/4 {
		t.Fatalf("%d live + %d tombstones in %d slots", kt.live, kt.tombs, len(kt.slots))
	}
	stored := 0
	for _, c := range kt.chunks {
		stored += len(c)
	}
	if live := stored - kt.garbage; kt.garbage > 3*live {
		t.Fatalf("%d bytes of garbage beside %d live", kt.garbage, live)
	}
}

// BenchmarkKeyTable is a writer's steady state: look a key up, then set it.
func BenchmarkKeyTable(b *testing.B) {
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = fmt.Sprintf("/registry/pods/ns-%d/pod-%08d", i%100, i)
	}
	kt := newKeyTable()
	for i, k := range keys {
		kt.Set(k, keyMeta{mod: int64(i), create: int64(i)})
	}
	b.ResetTimer()
	for i := range b.N {
		k := keys[i&(len(keys)-1)]
		m, _ := kt.Get(k)
		m.mod++
		kt.Set(k, m)
	}
}

// BenchmarkKeyTableLoad is loading the index at Open: a million keys set
// from buffers the caller reuses, as the iterator hands them over.
func BenchmarkKeyTableLoad(b *testing.B) {
	keys := make([][]byte, 1<<20)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "/registry/pods/ns-%03d/pod-%016x-%d", i%100, uint64(i)*0x9e3779b97f4a7c15, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		kt := newKeyTable()
		for i, k := range keys {
			kt.setBytes(k, keyMeta{mod: int64(i), create: int64(i)})
		}
	}
}
