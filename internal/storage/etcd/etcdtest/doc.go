// Package etcdtest runs real etcd clusters inside a test process, for the
// etcd storage backend's tests and for anything that needs an etcd to talk
// to (several API servers over one cluster, sharding).
//
// Members are go.etcd.io/etcd/server/v3/embed servers on loopback with free
// ports, temporary data directories and election settings fast enough for
// tests. Clients never reach a member directly: each member sits behind a
// TCP bridge owned by the cluster, so stopping or killing a member cuts its
// client connections at once (as a crashed machine would) instead of
// waiting for etcd's graceful shutdown of long-lived watch streams, and the
// endpoints stay the same across restarts.
package etcdtest
