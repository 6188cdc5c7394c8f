// Package certificates holds what kube-controller-manager's certificate
// controllers share: parsing a CertificateSigningRequest's request, reading
// its conditions, and the rules each built-in signer puts on the subject,
// SANs and usages it will sign (upstream's pkg/apis/certificates helpers).
// The controllers themselves are the subpackages: signer (csrsigning),
// approver (csrapproving) and cleaner (csrcleaner).
package certificates
