// Package signer is kube-controller-manager's csrsigning controller: it
// issues certificates from the cluster CA for approved, not denied, not
// failed and not yet issued CertificateSigningRequests of the three
// built-in signers (kubernetes.io/kube-apiserver-client,
// kubernetes.io/kube-apiserver-client-kubelet, kubernetes.io/kubelet-serving),
// honouring spec.expirationSeconds up to a maximum duration. A request the
// signer's rules refuse (package certificates) gets a Failed condition
// instead; requests for other signers are left to their signers.
package signer
