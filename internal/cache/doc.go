// Package cache is the watch cache: an in-memory, indexed mirror of one
// resource type's keys in a storage.Store, from which the API server answers
// every get, list and watch.
//
// One Cache per resource type. It lists the store's prefix once, then follows
// the store's Watch; each change updates
//
//   - the latest version of every object (a btree keyed by storage key, so a
//     list comes out in namespace/name order and a namespace is a key range),
//   - one secondary btree per value of each indexed field (spec.nodeName) and
//     indexed label (app), so a selector that requires an exact value on an
//     indexed key costs O(matching objects),
//   - the event window: a ring of recent changes (object and previous
//     object), sized from the resource's churn so a client reconnecting within
//     Config.ReconnectInterval finds its resourceVersion, bounded by
//     Config.MaxEvents,
//
// and is dispatched to the cache's watchers by index value, so a node's watch
// costs nothing for other nodes' pods.
//
// The window survives restarts and re-lists. After listing the store at
// revision R the cache starts its store watch from F = max(the store's
// compacted revision, R - Config.PrefillRevisions) rather than from R: the
// events in (F, R] are already in the listed state, so they only fill the
// window (their previous objects come from the previous window event on the
// key, or from storage.Event.PrevValue), and the window starts at F. A
// client that had seen any revision >= F before an API server restart
// resumes its watch (and its paginated list) instead of getting 410 and
// re-listing, which is what turns a restart into a relist storm. The price is
// paid at start: the store's history is one log for all prefixes, so every
// cache reads the whole range (prefill.go; docs/bench/cache.md). Should the
// history be compacted meanwhile, the window starts at R as it used to.
//
// A start need not list the store at all: with Config.ImageFile, a clean
// stop saves the cache's state (SaveImage: keys, revisions, labels and
// fields, the compressed values and their dictionary) and the next start
// reads that file, the prefix's state at the revision R it was saved at,
// instead of listing and decoding every object, then follows the store
// from R like after a list at R (image.go). At a million objects that is
// most of a restart.
//
// Reads follow the Kubernetes resourceVersion rules. A read with no
// resourceVersion is consistent: the cache asks the store for its current
// revision (rv@t0) and, if it is behind, requests a progress notification and
// waits until it has caught up (Alibaba's "data collaboration" protocol), so
// no read ever goes to the store. Lists at an older revision (Exact, and pages
// 2+ of a paginated list) are rebuilt from the current state by undoing the
// window's newer events; there are no per-revision snapshots. A
// resourceVersion beyond the store's current revision was issued by
// another store (the resource moved to another etcd shard, or the store
// was restored): it is 410 at once, never waited for (waitForClientRev).
//
// Memory: by default the cache keeps each object's stored bytes (plus its
// labels and selectable fields, packed into one string rather than two
// maps: attrs.go) and decodes what it serves — about 1.3 KB per
// running pod instead of 6 KB — so a million objects fit the design's
// memory budget; Config.CompressValues (the API server sets it) keeps
// those bytes S2-compressed, two thirds of their size for a typical pod,
// decompressing per read (value.go). Watch events carry the stored
// value (Event.Stored) and decode it only when a consumer asks
// (Event.Object), once for all the watchers sharing the event: a consumer
// that passes stored bytes through to the wire never decodes them.
// Config.RetainObjects keeps decoded
// objects instead, for
// types where read CPU matters more. Objects handed out by Get, List and
// watch events must be treated as read-only either way: watch events are
// shared by every watcher they are delivered to, and with RetainObjects so
// is everything else.
//
// Lock order: Cache.mu, then registry.mu, then watcher.mu.
package cache
