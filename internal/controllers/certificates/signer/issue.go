package signer

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

const (
	// backdate covers clients whose clocks run a little behind; it must
	// stay under the shortest duration a request may ask for (10 min).
	backdate = 5 * time.Minute
	// shortLived: below this validity the end is not backdated too, so a
	// 10-minute certificate is not 5 minutes shorter than asked.
	shortLived = 8 * time.Hour
	// minDuration is upstream's floor on a requested duration.
	minDuration = 10 * time.Minute
)

// issuer signs certificate requests with a CA (upstream's authority with
// its PermissiveSigningPolicy): subject and SANs from the request, key
// usages from spec.usages, nothing else the requester asked for (its
// extensions are dropped), never a CA.
type issuer struct {
	ca          *x509.Certificate
	key         crypto.Signer
	maxDuration time.Duration
	now         func() time.Time
}

// duration is the validity for a request asking expirationSeconds: the
// maximum unless it asks for less, and never under ten minutes.
func (s *issuer) duration(expirationSeconds *int32) time.Duration {
	if expirationSeconds == nil {
		return s.maxDuration
	}
	d := time.Duration(*expirationSeconds) * time.Second
	switch {
	case d > s.maxDuration:
		return s.maxDuration
	case d < minDuration:
		return minDuration
	}
	return d
}

// issue returns the PEM certificate for req.
func (s *issuer) issue(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, expirationSeconds *int32) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("verifying the request's signature: %w", err)
	}
	ku, eku, err := keyUsages(usages)
	if err != nil {
		return nil, err
	}
	now := s.now()
	ttl := s.duration(expirationSeconds)
	notBefore := now.Add(-backdate)
	notAfter := notBefore.Add(ttl)
	if ttl < shortLived {
		notAfter = now.Add(ttl)
	}
	if !now.Before(s.ca.NotAfter) {
		return nil, errors.New("the signer has expired")
	}
	if notAfter.After(s.ca.NotAfter) {
		notAfter = s.ca.NotAfter
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              ku,
		ExtKeyUsage:           eku,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, req.PublicKey, s.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

var (
	keyUsageOf = map[certificatesv1.KeyUsage]x509.KeyUsage{
		certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
		certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
		certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
		certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
		certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
		certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
		certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
		certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
		certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
		certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
	}
	extKeyUsageOf = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
		certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
		certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
		certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
		certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
		certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
		certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
		certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
		certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
		certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
		certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
	}
)

// keyUsages maps spec.usages onto X.509 key usages and extended key
// usages (sorted, deduplicated).
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	for _, u := range usages {
		if k, ok := keyUsageOf[u]; ok {
			ku |= k
		} else if e, ok := extKeyUsageOf[u]; ok {
			if !slices.Contains(eku, e) {
				eku = append(eku, e)
			}
		} else {
			return 0, nil, fmt.Errorf("unrecognized usage: %s", u)
		}
	}
	slices.Sort(eku)
	return ku, eku, nil
}
