package sim

import (
	"fmt"
	"math/bits"
	"net/netip"
)

// maxPodsPerNode bounds Config.Pods so a node's pod range stays a sane slice
// of 10.0.0.0/8.
const maxPodsPerNode = 4094

// hostBits is the size of each node's pod range: enough addresses for pods
// plus network and broadcast, at least a /24.
func hostBits(pods int) int {
	return max(8, bits.Len(uint(pods+1)))
}

// maxNodes is how many node pod ranges fit in 10.0.0.0/8.
func maxNodes(pods int) int {
	return 1 << (24 - hostBits(pods))
}

// podCIDR is node index's pod range: 10.0.0.0/8 cut into ranges of
// hostBits(pods), so pod IPs are unique across every hollow node.
func podCIDR(index, pods int) netip.Prefix {
	hb := hostBits(pods)
	base := uint32(10)<<24 | uint32(index)<<hb
	return netip.PrefixFrom(addrFrom(base), 32-hb)
}

// hostIP is node index's InternalIP, in 172.16.0.0/12.
func hostIP(index int) netip.Addr {
	return addrFrom(uint32(172)<<24 | uint32(16)<<16 | uint32(index+1))
}

func addrFrom(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// ipPool hands out the pod IPs of one node's range. Not safe for concurrent
// use; the node's lock guards it.
type ipPool struct {
	base  uint32
	size  int // usable addresses: .1 .. .size
	next  int // next never-used offset, so addresses are reused last
	free  []int
	inUse map[int]bool
}

func newIPPool(p netip.Prefix, pods int) *ipPool {
	a := p.Addr().As4()
	base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	return &ipPool{base: base, size: 1<<(32-p.Bits()) - 2, next: 1, inUse: map[int]bool{}}
}

// allocate returns a free address.
func (p *ipPool) allocate() (string, error) {
	var off int
	switch {
	case p.next <= p.size:
		off = p.next
		p.next++
	case len(p.free) > 0:
		off = p.free[0]
		p.free = p.free[1:]
	default:
		return "", fmt.Errorf("no free pod IP in a range of %d", p.size)
	}
	p.inUse[off] = true
	return addrFrom(p.base + uint32(off)).String(), nil
}

// claim marks ip as used (a pod found running after a restart); false if ip
// is not in the range or already used.
func (p *ipPool) claim(ip string) bool {
	off, ok := p.offset(ip)
	if !ok || p.inUse[off] {
		return false
	}
	p.inUse[off] = true
	if off >= p.next {
		// Skip past it; the addresses jumped over become free.
		for o := p.next; o < off; o++ {
			p.free = append(p.free, o)
		}
		p.next = off + 1
	} else {
		for i, o := range p.free {
			if o == off {
				p.free = append(p.free[:i], p.free[i+1:]...)
				break
			}
		}
	}
	return true
}

// release returns ip to the pool; unknown addresses are ignored.
func (p *ipPool) release(ip string) {
	off, ok := p.offset(ip)
	if !ok || !p.inUse[off] {
		return
	}
	delete(p.inUse, off)
	p.free = append(p.free, off)
}

func (p *ipPool) offset(ip string) (int, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if v <= p.base || v > p.base+uint32(p.size) {
		return 0, false
	}
	return int(v - p.base), true
}
