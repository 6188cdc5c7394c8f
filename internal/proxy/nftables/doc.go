// Package nftables is the proxy's nf_tables backend: it computes, per IP
// family, the tables, chains, verdict maps and sets that forward a node's
// Service traffic, diffs them against what is programmed, and writes only
// the difference in one netlink transaction (github.com/google/nftables).
//
// Layout (one table "myriad-proxy" per family; see testdata/*.golden):
//
//	nat-prerouting, nat-output ─ jump services
//	services: daddr . l4proto . dport vmap @service-ips ─ goto svc-<port> | ext-<port>
//	          fib daddr local, l4proto . dport vmap @service-nodeports ─ goto nodeport-<port>
//	svc-<port>:      [mark for masquerade: always (--masquerade-all), or if saddr is
//	                 outside the cluster CIDR] goto lb-addr-<N>
//	ext-<port>:      [mark for masquerade (Cluster policy)] goto lb-addr-<N>
//	nodeport-<port>: [mark for masquerade (Cluster policy)] goto lb-nodeport-<N>
//	                 (Local policy: the node's own traffic first goes, marked,
//	                 to lb-local-origin-*-<N> over all endpoints)
//	lb-addr-<N>:     dnat to daddr . l4proto . dport . (numgen random mod N) map @endpoints
//	lb-nodeport-<N>: dnat to l4proto . dport . (numgen random mod N) map @nodeport-endpoints
//	filter-{input,forward,output}: ct state new → @no-endpoint-* vmaps → reject
//	filter-{prerouting,output}: ct state new, daddr . l4proto . dport vmap @firewall-ips
//	                 ─ goto firewall-<port>: saddr in a loadBalancerSourceRanges CIDR return; drop
//	nat-postrouting: masquerade marked packets and hairpin (@hairpin: ep . ep)
//
// Two kernel facts shape this, both measured (docs/bench/proxy.md): the
// kernel finds a named set by a linear search of the table's sets, and
// walks a map's every element each time a rule binds it for a lookup with
// a result. So there is no map per Service (a first version had one and
// paid O(Services) per transaction), and the endpoint maps are bound only
// by the shared lb-* chains, one per endpoint count N (and affinity
// timeout), which key their lookups on the packet itself: this kernel
// (6.18) also refuses rules that read registers another rule wrote, so a
// per-Service chain cannot hand an id to a shared one.
//
// Endpoints are elements keyed by entry point and slot: an endpoint
// replaced in place rewrites one element per entry point (cluster IP,
// each external IP, the node port), and slots are kept across changes.
// ClientIP affinity is a dynamic map from entry point . client address to
// slot; a slot past the current endpoints misses and the client gets a new
// random pick, so removed endpoints need no affinity cleanup.
//
// The dry-run backend computes and diffs exactly the same state but writes
// nothing, for the simulator's thousands of proxies.
package nftables
