package serviceip

import (
	"net/netip"
	"testing"
)

func TestParseItem(t *testing.T) {
	for _, c := range []struct {
		in   string
		addr string
		port int
		ok   bool
	}{
		{"ip/10.96.0.1", "10.96.0.1", 0, true},
		{"nodeport/30000", "", 30000, true},
		{"ip/", "", 0, false},
		{"ip/10.96.0.300", "", 0, false},
		{"nodeport/0", "", 0, false},
		{"nodeport/-1", "", 0, false},
		{"nodeport/x", "", 0, false},
		{"port/1", "", 0, false},
		{"", "", 0, false},
	} {
		addr, port, ok := ParseItem(c.in)
		if ok != c.ok || port != c.port || (c.addr != "" && addr.String() != c.addr) {
			t.Errorf("ParseItem(%q) = %v %d %v, want %s %d %v", c.in, addr, port, ok, c.addr, c.port, c.ok)
		}
	}
}

// FuzzParseItem: claim keys read back from the store parse or are
// refused, never crash, and what parses names itself again.
func FuzzParseItem(f *testing.F) {
	for _, s := range []string{"ip/10.96.0.1", "nodeport/30000", "ip/::1", "nodeport/", "ip/1.2.3.4/5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, port, ok := ParseItem(s)
		if !ok {
			return
		}
		var again string
		if port == 0 {
			again = ipItem(addr)
		} else {
			again = portItem(port)
		}
		a2, p2, ok2 := ParseItem(again)
		if !ok2 || p2 != port || (port == 0 && a2 != addr) {
			t.Fatalf("%q parsed as %v %d, whose item %q parses as %v %d %v", s, addr, port, again, a2, p2, ok2)
		}
	})
}

// TestResync: the allocator's view becomes exactly the claims given.
func TestResync(t *testing.T) {
	a, err := New("10.0.0.0/29", "30000-30002")
	if err != nil {
		t.Fatal(err)
	}
	a.mu.ips[netip.MustParseAddr("10.0.0.5")] = true
	a.mu.ports[30002] = true
	a.Resync([]string{"ip/10.0.0.1", "nodeport/30000", "garbage"})
	if len(a.mu.ips) != 1 || !a.mu.ips[netip.MustParseAddr("10.0.0.1")] || len(a.mu.ports) != 1 || !a.mu.ports[30000] {
		t.Fatalf("after resync: ips %v ports %v", a.mu.ips, a.mu.ports)
	}
}
