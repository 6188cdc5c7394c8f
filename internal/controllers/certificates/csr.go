package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// Well-known identities the kubelet signers require.
const (
	// NodeUserPrefix starts a node's user name: "system:node:<name>".
	NodeUserPrefix = "system:node:"
	// NodesGroup is the group of every node.
	NodesGroup = "system:nodes"
)

// Errors a signer's rules return; a request failing one is refused with a
// Failed condition carrying its message, as upstream.
var (
	ErrOrganizationNotNodes = errors.New("subject organization is not system:nodes")
	ErrCommonNameNotNode    = fmt.Errorf("subject common name does not begin with %s", NodeUserPrefix)
	ErrDNSOrIPSANRequired   = errors.New("DNS or IP subjectAltName is required")
	ErrDNSSANNotAllowed     = errors.New("DNS subjectAltNames are not allowed")
	//lint:ignore ST1005 upstream's message, shown in the Failed condition
	ErrEmailSANNotAllowed = errors.New("Email subjectAltNames are not allowed")
	ErrIPSANNotAllowed    = errors.New("IP subjectAltNames are not allowed")
	ErrURISANNotAllowed   = errors.New("URI subjectAltNames are not allowed")
)

// ParseRequest decodes spec.request: one PEM "CERTIFICATE REQUEST" block
// holding a PKCS#10 request. The API server has checked its signature.
func ParseRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// ApprovalState reports whether csr carries an Approved or a Denied
// condition (upstream's GetCertApprovalCondition: any status counts, the
// API server only admits True).
func ApprovalState(csr *certificatesv1.CertificateSigningRequest) (approved, denied bool) {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		}
	}
	return approved, denied
}

// IsApproved: approved and not denied.
func IsApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	approved, denied := ApprovalState(csr)
	return approved && !denied
}

// HasTrueCondition reports whether csr has a condition of type t with
// status True.
func HasTrueCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// usageSet is usages as a set, for the exact-match rules below.
func usageSet(usages []certificatesv1.KeyUsage) map[certificatesv1.KeyUsage]bool {
	m := make(map[certificatesv1.KeyUsage]bool, len(usages))
	for _, u := range usages {
		m[u] = true
	}
	return m
}

// equalSet reports whether set holds exactly want.
func equalSet(set map[certificatesv1.KeyUsage]bool, want ...certificatesv1.KeyUsage) bool {
	if len(set) != len(want) {
		return false
	}
	for _, u := range want {
		if !set[u] {
			return false
		}
	}
	return true
}

func usageList(us ...certificatesv1.KeyUsage) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = string(u)
	}
	slices.Sort(s)
	return "[" + strings.Join(s, " ") + "]"
}

// ValidateKubeletClient is the rule of kubernetes.io/kube-apiserver-client-kubelet:
// O=[system:nodes], CN system:node:<name>, no SANs, and usages exactly
// {digital signature, client auth}, key encipherment optional (RSA keys).
func ValidateKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return ErrOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) > 0:
		return ErrDNSSANNotAllowed
	case len(req.EmailAddresses) > 0:
		return ErrEmailSANNotAllowed
	case len(req.IPAddresses) > 0:
		return ErrIPSANNotAllowed
	case len(req.URIs) > 0:
		return ErrURISANNotAllowed
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		return ErrCommonNameNotNode
	}
	set := usageSet(usages)
	full := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	if !equalSet(set, full...) && !equalSet(set, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth) {
		return fmt.Errorf("usages did not match %s", usageList(full...))
	}
	return nil
}

// ValidateKubeletServing is the rule of kubernetes.io/kubelet-serving:
// O=[system:nodes], at least one DNS or IP SAN and no email or URI SANs,
// usages exactly {digital signature, server auth}, key encipherment
// optional, and CN system:node:<name>.
func ValidateKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return ErrOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return ErrDNSOrIPSANRequired
	case len(req.EmailAddresses) > 0:
		return ErrEmailSANNotAllowed
	case len(req.URIs) > 0:
		return ErrURISANNotAllowed
	}
	set := usageSet(usages)
	full := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	if !equalSet(set, full...) && !equalSet(set, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth) {
		return fmt.Errorf("usages did not match %s", usageList(full...))
	}
	if !strings.HasPrefix(req.Subject.CommonName, NodeUserPrefix) {
		return ErrCommonNameNotNode
	}
	return nil
}

// ValidateAPIServerClient is the rule of kubernetes.io/kube-apiserver-client:
// client auth is required; digital signature and key encipherment are
// allowed; nothing else is.
func ValidateAPIServerClient(usages []certificatesv1.KeyUsage) error {
	client := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			client = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !client {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

// ValidateForSigner applies the rule of signerName to a request. known is
// false for signers other than the three built-in ones Myriad signs for,
// which the signer leaves alone.
func ValidateForSigner(signerName string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (known bool, err error) {
	switch signerName {
	case certificatesv1.KubeAPIServerClientSignerName:
		return true, ValidateAPIServerClient(usages)
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		return true, ValidateKubeletClient(req, usages)
	case certificatesv1.KubeletServingSignerName:
		return true, ValidateKubeletServing(req, usages)
	}
	return false, nil
}
