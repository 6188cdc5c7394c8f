// Package namespace is the namespace controller: once a namespace is
// marked for deletion (Terminating, with the "kubernetes" spec finalizer
// the API adds), it deletes every namespaced object in it — resources found
// through discovery, listed and deleted through the metadata client —
// reports progress in the namespace's deletion conditions, and when nothing
// is left removes the finalizer through namespaces/finalize, after which
// the API server removes the namespace.
package namespace
