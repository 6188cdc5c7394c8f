// Package protoprune removes named fields from protobuf messages without
// decoding them: it walks the wire format (google.golang.org/protobuf's
// protowire) and copies every field except the ones a Fields set names,
// descending into embedded messages where the set says so.
//
// The API server uses it to decode stored objects only as far as the
// watch cache's index needs (metadata less managedFields, a pod less its
// containers and statuses): most of the bytes, and most of what decoding
// allocates, are in the parts no index reads.
package protoprune
