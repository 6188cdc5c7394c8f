// Package cleaner is kube-controller-manager's csrcleaner controller: every
// hour it deletes CertificateSigningRequests that have served their
// purpose — approved and issued, denied or failed more than an hour ago,
// pending (no condition at all) for more than a day, or whose issued
// certificate has expired.
package cleaner
