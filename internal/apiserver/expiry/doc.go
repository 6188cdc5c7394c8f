// Package expiry deletes the keys under a store prefix a fixed time after
// their last write: the API server's --event-ttl.
//
// Upstream attaches an etcd lease to every event it writes. Myriad's
// embedded store has no leases, so an Expirer follows the prefix's watch
// instead: each write it sees queues the key at its revision, due one TTL
// later, and when the entry comes due the key is deleted if that is still
// its revision (a later write queued it again; a conflict means it was
// rewritten, not-found that someone deleted it). Entries arrive in the
// order they come due, so the queue is a FIFO and expiring costs nothing
// per event beyond its delete: there is never a scan of all events, but for
// the single list that fills the queue when the Expirer starts (or after
// its watch is lost), where an event's age is read from the event itself.
//
// Several API servers on one store each expire what they see; the
// compare-and-swap makes the extra deletes harmless.
package expiry
