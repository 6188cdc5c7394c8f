// Package certsubject is upstream's CertificateSubjectRestriction admission
// plugin: a CertificateSigningRequest for the kubernetes.io/kube-apiserver-client
// signer may not ask for the system:masters group, so approving a client
// certificate can never mint a superuser by accident.
package certsubject
