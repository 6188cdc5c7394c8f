// Package nftables is the proxy's nf_tables backend: it computes, per IP
// family, the tables, chains, verdict maps and sets that forward a node's
// Service traffic, diffs them against what is programmed, and writes only
// the difference in one netlink transaction (github.com/google/nftables).
//
// Layout (one table "myriad-proxy" per family; see testdata/*.golden):
//
//	nat-prerouting, nat-output ─ jump services
//	services: daddr . l4proto . dport vmap @service-ips        ─ goto svc-<port> / ext-<port>
//	          fib daddr local: l4proto . dport vmap @service-nodeports ─ goto ext-<port>
//	svc-<port>: [masquerade if saddr outside the cluster CIDR]
//	            dnat to numgen random mod N map @clu-<port>   (slot → addr . port)
//	ext-<port>: masquerade (Cluster policy) or local-only map (Local policy)
//	filter-{input,forward,output}: ct state new → @no-endpoint-* vmaps → reject
//	nat-postrouting: masquerade marked packets and hairpin (@hairpin: ep . ep)
//
// Unlike upstream's nftables proxier, endpoints are elements of a per-port
// map indexed by slot rather than per-endpoint chains: an endpoint replaced
// in place is one map element, and ClientIP affinity is a dynamic map from
// client address to slot (an affinity to a slot beyond N misses and falls
// back to a random pick, so removed endpoints need no affinity cleanup).
//
// The dry-run backend computes and diffs exactly the same state but writes
// nothing, for the simulator's thousands of proxies.
package nftables
