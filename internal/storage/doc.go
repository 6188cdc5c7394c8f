// Package storage defines the key-value store every Myriad read and write
// ultimately goes through, and the errors its backends return.
//
// The contract is deliberately small (about ten methods) so that the embedded
// backend (package embedded, on Pebble) and the later etcd v3 backend can both
// implement it and share one conformance suite (package storagetest).
//
// Keys are "/<group>/<resource>/<namespace>/<name>"-shaped strings; values are
// opaque bytes (the protobuf encoding of an object, chosen by the caller). Every
// successful write advances one global, strictly increasing revision; an
// object's metadata.resourceVersion is the revision of its last write.
//
// Watch events carry the value each write replaced (Event.PrevValue and
// PrevModRevision, etcd's PrevKV), live and replayed from history alike: a
// consumer that starts watching from an old revision (the watch cache
// refilling its event window after a restart) can tell what every change
// changed without having seen the write before it.
package storage
