// Package runtimeclass is upstream's RuntimeClass admission plugin: a pod
// created with spec.runtimeClassName gets that class's pod overhead and
// its scheduling constraints (node selector merged in, tolerations
// merged), and is refused when the class does not exist or when what the
// pod says conflicts with the class.
//
// It is both a mutating plugin (Admit sets overhead and scheduling) and a
// validating one (Validate checks, on the final object, that the overhead
// is the class's), as upstream's is.
package runtimeclass
