// Package pki gives a Myriad API server its credentials without any manual
// setup: on first start it creates, in a directory of the caller's choosing,
//
//	ca.crt, ca.key            a self-signed ECDSA P-256 certificate authority
//	apiserver.crt, .key       the serving certificate, signed by the CA
//	admin.token               a random 256-bit bearer token for system:admin
//	sa.key, sa.pub            the RSA-2048 key ServiceAccount tokens are signed with
//	                          (EnsureServiceAccountKey; created on first use)
//
// and later starts reuse them. The CA and token are never replaced once
// created — every kubeconfig handed out depends on them — but the serving
// certificate is re-issued whenever it no longer covers the requested names
// or is close to expiry, which is invisible to clients because they trust the
// CA, not the leaf.
//
// WriteKubeconfig writes an admin kubeconfig that kubectl and client-go use
// as is. The CA also issues client certificates (CN = user, O = groups) so
// nodes and components can later authenticate without sharing the admin
// token.
//
// Keys and the token are written 0600 in a 0700 directory, each file
// atomically (temp file + rename) so a crash never leaves half a key behind.
// Concurrent first starts of two processes on the same directory are not
// supported.
package pki
