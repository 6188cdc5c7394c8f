package servingapprover

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates"
)

// Why a request is not approved.
var (
	ErrNotTheNode   = errors.New("the requestor is not the node the certificate names")
	ErrForeignName  = errors.New("a DNS name is not one of the node's addresses")
	ErrForeignIP    = errors.New("an IP address is not one of the node's addresses")
	ErrNodeNotFound = errors.New("the node does not exist")
)

// nodeName is the node a serving request is for, if it is one the policy
// may consider: right signer, the signer's subject and usages, and the
// requestor is that node.
func nodeName(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) (string, error) {
	if err := certificates.ValidateKubeletServing(req, csr.Spec.Usages); err != nil {
		return "", err
	}
	cn := req.Subject.CommonName
	if csr.Spec.Username != cn || !slices.Contains(csr.Spec.Groups, certificates.NodesGroup) {
		return "", ErrNotTheNode
	}
	return strings.TrimPrefix(cn, certificates.NodeUserPrefix), nil
}

// checkSANs reports whether every SAN of req is one of node's addresses:
// DNS names among its Hostname, InternalDNS and ExternalDNS addresses or
// its name; IPs among its InternalIP and ExternalIP addresses.
func checkSANs(req *x509.CertificateRequest, node *corev1.Node) error {
	names := []string{node.Name}
	var ips []net.IP
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names = append(names, strings.ToLower(a.Address))
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	for _, n := range req.DNSNames {
		if !slices.Contains(names, strings.ToLower(n)) {
			return fmt.Errorf("%w: %s", ErrForeignName, n)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Errorf("%w: %s", ErrForeignIP, ip)
		}
	}
	return nil
}
