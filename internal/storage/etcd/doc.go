// Package etcd is the etcd v3 backend of storage.Store: Myriad's keys and
// values in an etcd cluster, laid out as upstream Kubernetes lays them out,
// so that a cluster's existing etcd data can be served.
//
// The mapping onto etcd is direct: a resourceVersion is an etcd revision;
// Create, Update and Delete are single transactions comparing the key's
// create or mod revision (a failed compare reads the current value in the
// same transaction); Get and List are linearizable reads, a large List
// paged at one pinned revision; Watch is an etcd watch with previous values
// and progress notifications. What etcd leaves to its client lives here:
// bounded retries of reads (never of writes whose outcome is unknown), the
// compacted revision (etcd does not report it directly), leases shared by
// TTL writes, compaction elected among several API servers, and the
// translation between Myriad's keys and upstream's (keys.go).
//
// Files: store.go (CRUD), watch.go, compact.go, lease.go (TTL writes),
// health.go, keys.go (key layout), metrics.go, errors.go (retry and error
// mapping), config.go. The etcdtest subpackage runs real etcd clusters
// in-process for tests.
package etcd
