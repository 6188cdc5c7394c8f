package sim

import (
	"testing"
)

func TestPodCIDRsAreDisjoint(t *testing.T) {
	tests := []struct {
		index, pods int
		want        string
	}{
		{0, 110, "10.0.0.0/24"},
		{1, 110, "10.0.1.0/24"},
		{9999, 110, "10.39.15.0/24"},
		{65535, 110, "10.255.255.0/24"},
		{1, 254, "10.0.1.0/24"},
		{1, 255, "10.0.2.0/23"},
		{3, 1000, "10.0.12.0/22"},
	}
	for _, tc := range tests {
		if got := podCIDR(tc.index, tc.pods).String(); got != tc.want {
			t.Errorf("podCIDR(%d, %d) = %s, want %s", tc.index, tc.pods, got, tc.want)
		}
	}
	if got, want := maxNodes(110), 65536; got != want {
		t.Errorf("maxNodes(110) = %d, want %d", got, want)
	}
	if got := hostIP(9999).String(); got != "172.16.39.16" {
		t.Errorf("hostIP(9999) = %s", got)
	}
}

func TestIPPool(t *testing.T) {
	p := newIPPool(podCIDR(2, 2), 2) // a /24 for a tiny node: 254 addresses
	seen := map[string]bool{}
	for range 254 {
		ip, err := p.allocate()
		if err != nil {
			t.Fatal(err)
		}
		if seen[ip] {
			t.Fatalf("%s handed out twice", ip)
		}
		seen[ip] = true
	}
	if _, err := p.allocate(); err == nil {
		t.Fatal("allocated past the end of the range")
	}
	p.release("10.0.2.7")
	p.release("10.0.2.7") // twice: ignored
	p.release("10.9.9.9") // not ours: ignored
	if ip, err := p.allocate(); err != nil || ip != "10.0.2.7" {
		t.Fatalf("after release: %q, %v; want 10.0.2.7", ip, err)
	}

	q := newIPPool(podCIDR(0, 110), 110)
	if !q.claim("10.0.0.5") || q.claim("10.0.0.5") || q.claim("10.1.0.5") || q.claim("10.0.0.0") {
		t.Fatal("claim: want the first claim of 10.0.0.5 only to succeed")
	}
	got := map[string]bool{}
	for range 5 {
		ip, _ := q.allocate()
		got[ip] = true
	}
	if got["10.0.0.5"] || len(got) != 5 {
		t.Errorf("allocated %v: want 5 addresses, none the claimed one", got)
	}
}
