package kubeletserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// ErrCertificateNotIssued is returned when no signer issued the serving
// certificate in time, or the request was denied or failed.
var ErrCertificateNotIssued = errors.New("kubelet serving certificate not issued")

// CertificateRequest says which serving certificate to ask the cluster for.
type CertificateRequest struct {
	// NodeName makes the subject CN=system:node:<NodeName>, O=system:nodes,
	// what the kubernetes.io/kubelet-serving signer requires. Required.
	NodeName string
	// IPs and DNSNames are the certificate's SANs; at least one is required.
	IPs      []net.IP
	DNSNames []string
	// Timeout bounds the wait for approval and signing; default 1m.
	Timeout time.Duration
	// Logger receives progress; default discards.
	Logger *slog.Logger
}

// ServingCertificate gets a kubelet serving certificate the way a kubelet
// does (serverTLSBootstrap): a new ECDSA P-256 key, a CertificateSigningRequest
// for signer kubernetes.io/kubelet-serving with usages digital signature
// and server auth, then the issued certificate. Serving certificates are
// never approved automatically, so it approves the request itself; when
// its credentials may not (403), it waits for someone who may. It fails
// with ErrCertificateNotIssued when the request is denied or fails, or
// nothing signs it within the timeout.
func ServingCertificate(ctx context.Context, client kubernetes.Interface, req CertificateRequest) (*tls.Certificate, error) {
	if req.NodeName == "" || len(req.IPs)+len(req.DNSNames) == 0 {
		return nil, errors.New("kubeletserver: a serving certificate needs a node name and at least one IP or DNS name")
	}
	if req.Timeout <= 0 {
		req.Timeout = time.Minute
	}
	log := req.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubeletserver: generating key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + req.NodeName, Organization: []string{"system:nodes"}},
		IPAddresses: req.IPs,
		DNSNames:    req.DNSNames,
	}, key)
	if err != nil {
		return nil, fmt.Errorf("kubeletserver: creating certificate request: %w", err)
	}
	csrs := client.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubeletserver: creating CertificateSigningRequest: %w", err)
	}
	name := csr.Name
	log.Info("requested kubelet serving certificate", "csr", name, "ips", req.IPs, "dnsNames", len(req.DNSNames))
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         "MyriadSimApproved",
		Message:        "myriad sim approved its hollow nodes' kubelet serving certificate",
		LastUpdateTime: metav1.Now(),
	})
	if _, err := csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); apierrors.IsForbidden(err) {
		log.Warn("may not approve the kubelet serving certificate; waiting for an approver", "csr", name, "err", err)
	} else if err != nil {
		return nil, fmt.Errorf("kubeletserver: approving CertificateSigningRequest %s: %w", name, err)
	}

	var issued []byte
	var last *certificatesv1.CertificateSigningRequest
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, req.Timeout, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; the timeout ends it
		}
		last = got
		for _, c := range got.Status.Conditions {
			if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("%w: CertificateSigningRequest %s %s: %s %s", ErrCertificateNotIssued, name, c.Type, c.Reason, c.Message)
			}
		}
		issued = got.Status.Certificate
		return len(issued) > 0, nil
	})
	if errors.Is(err, ErrCertificateNotIssued) {
		return nil, err
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		approved := last != nil && hasApproved(last)
		return nil, fmt.Errorf("%w: CertificateSigningRequest %s (approved: %t) not signed within %v; is a %s signer running (myriad up and myriad controllers run one)?",
			ErrCertificateNotIssued, name, approved, req.Timeout, certificatesv1.KubeletServingSignerName)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("kubeletserver: encoding key: %w", err)
	}
	cert, err := tls.X509KeyPair(issued, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, fmt.Errorf("kubeletserver: the certificate issued for CertificateSigningRequest %s: %w", name, err)
	}
	log.Info("kubelet serving certificate issued", "csr", name, "notAfter", cert.Leaf.NotAfter)
	return &cert, nil
}

func hasApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// TLSConfig is the server's TLS configuration with cert: TLS 1.2 or newer,
// and a client certificate verified against ClientCAs when one is given.
// As on the kubelet, the handshake accepts a client without one; the
// handler then answers 401 unless Anonymous.
func (s *Server) TLSConfig(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*cert},
		ClientCAs:    s.cfg.ClientCAs,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		NextProtos:   []string{"http/1.1"}, // SPDY and WebSocket upgrades need HTTP/1.1
	}
	if s.cfg.ClientCAs == nil {
		c.ClientAuth = tls.NoClientCert
	}
	return c
}
