package proxy

import (
	"fmt"
	"net/netip"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claimKey is what two service ports cannot share on one node: a NodePort
// (addr invalid) or an address:port (cluster IP, external IP).
type claimKey struct {
	fam   Family
	proto v1.Protocol
	addr  netip.Addr
	port  uint16
}

func (k claimKey) String() string {
	if !k.addr.IsValid() {
		return fmt.Sprintf("nodePort %s/%d", k.proto, k.port)
	}
	return fmt.Sprintf("%s/%s", k.proto, netip.AddrPortFrom(k.addr, k.port))
}

type claimOwner struct {
	svc     types.NamespacedName
	created time.Time
}

// before orders owners: the older Service keeps a contested port, as the
// API server's allocator would have let it have it first.
func (o claimOwner) before(x claimOwner) bool {
	if !o.created.Equal(x.created) {
		return o.created.Before(x.created)
	}
	return o.svc.String() < x.svc.String()
}

// claims tracks who owns each contested key. Only the sync loop uses it.
type claims struct {
	owner  map[claimKey]claimOwner
	held   map[types.NamespacedName][]claimKey
	losers map[claimKey]map[types.NamespacedName]struct{}
}

func newClaims() *claims {
	return &claims{owner: map[claimKey]claimOwner{}, held: map[types.NamespacedName][]claimKey{}, losers: map[claimKey]map[types.NamespacedName]struct{}{}}
}

func portKeys(pv *PortView) []claimKey {
	keys := []claimKey{{pv.Family, pv.Name.Protocol, pv.ClusterIP, pv.Port}}
	for _, a := range pv.ExternalIPs {
		keys = append(keys, claimKey{pv.Family, pv.Name.Protocol, a, pv.Port})
	}
	if pv.NodePort != 0 {
		keys = append(keys, claimKey{fam: pv.Family, proto: pv.Name.Protocol, port: pv.NodePort})
	}
	return keys
}

// resolveConflicts drops from changes' views the ports that collide with an
// older Service's (overlapping NodePorts, duplicate address:port), recording
// why in Skipped; a Service that loses or regains a key because of another's
// change is recomputed and added to changes.
func (p *Proxier) resolveConflicts(changes map[types.NamespacedName]*ServiceView) {
	c := p.claims
	work := make([]types.NamespacedName, 0, len(changes))
	for k := range changes {
		work = append(work, k)
	}
	recompute := func(k types.NamespacedName) {
		p.mu.Lock()
		changes[k] = p.viewLocked(k)
		p.mu.Unlock()
		work = append(work, k)
	}
	for len(work) > 0 {
		key := work[len(work)-1]
		work = work[:len(work)-1]
		for _, k := range c.held[key] {
			if c.owner[k].svc == key {
				delete(c.owner, k)
				for l := range c.losers[k] {
					delete(c.losers[k], l)
					recompute(l)
				}
			}
			delete(c.losers[k], key)
		}
		delete(c.held, key)
		v := changes[key]
		if v == nil {
			continue
		}
		kept := v.Ports[:0]
		for i := range v.Ports {
			pv := &v.Ports[i]
			me := claimOwner{svc: key, created: pv.Created}
			keys := portKeys(pv)
			lost := false
			for _, k := range keys {
				if o, ok := c.owner[k]; ok && o.svc != key && o.before(me) {
					v.Skipped = append(v.Skipped, fmt.Sprintf("%s: %s is already used by service %s", pv.Name, k, o.svc))
					if c.losers[k] == nil {
						c.losers[k] = map[types.NamespacedName]struct{}{}
					}
					c.losers[k][key] = struct{}{}
					c.held[key] = append(c.held[key], k)
					lost = true
					break
				}
			}
			if lost {
				continue
			}
			for _, k := range keys {
				if o, ok := c.owner[k]; ok && o.svc != key {
					// The newer owner loses the key and is recomputed.
					if c.losers[k] == nil {
						c.losers[k] = map[types.NamespacedName]struct{}{}
					}
					c.losers[k][o.svc] = struct{}{}
					c.owner[k] = me
					recompute(o.svc)
				}
				c.owner[k] = me
				c.held[key] = append(c.held[key], k)
			}
			kept = append(kept, *pv)
		}
		v.Ports = kept
	}
}
