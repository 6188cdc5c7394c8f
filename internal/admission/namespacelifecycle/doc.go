// Package namespacelifecycle is the admission half of upstream's
// NamespaceLifecycle plugin: nothing may be created in a namespace that
// does not exist or is being deleted.
//
// The other half — a deleted namespace with spec finalizers is marked
// Terminating and stays until the namespace controller has emptied it and
// called finalize — is how namespaces are deleted, not admission; the API
// server's delete path does it.
package namespacelifecycle
