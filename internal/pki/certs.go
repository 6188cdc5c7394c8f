package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// clockSkew backdates every certificate so a client whose clock runs a
// little behind the server's does not reject a certificate issued just now.
const clockSkew = time.Hour

// keyPair is a certificate with its private key, in parsed and PEM form.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pemBlock("PRIVATE KEY", der), nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// newNamedCA is a CA whose common name is name@<unix time>.
func newNamedCA(name string, now time.Time, validity time.Duration) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", name, now.Unix())},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaves only; no intermediate can be minted from it.
		MaxPathLenZero: true,
	}
	return sign(tmpl, tmpl, key, key, keyPEM)
}

// issue signs a leaf certificate for cn/orgs with the given usages and SANs.
func issue(ca *keyPair, now time.Time, validity time.Duration, cn string, orgs []string,
	usage x509.ExtKeyUsage, dns []string, ips []net.IP) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		// A leaf outliving its CA would fail verification anyway; make
		// the expiry visible on the leaf itself.
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	return sign(tmpl, ca.cert, key, ca.key, keyPEM)
}

func sign(tmpl, parent *x509.Certificate, key crypto.Signer, parentKey crypto.Signer, keyPEM []byte) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("pki: sign %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der), keyPEM: keyPEM}, nil
}

// parseKeyPair parses PEM certificate and key and checks that they belong
// together.
func parseKeyPair(certPEM, keyPEM []byte, certPath, keyPath string) (*keyPair, error) {
	certDER, err := decodePEM(certPEM, "CERTIFICATE", certPath)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", certPath, err)
	}
	keyDER, err := decodePEM(keyPEM, "PRIVATE KEY", keyPath)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", keyPath, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("pki: %s: key of type %T cannot sign", keyPath, parsed)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if pub, ok := key.Public().(equaler); !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("pki: %s does not match %s", keyPath, certPath)
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// covers reports whether cert names every required DNS name and IP.
func covers(cert *x509.Certificate, dns []string, ips []net.IP) bool {
	for _, d := range dns {
		if !containsString(cert.DNSNames, d) {
			return false
		}
	}
	for _, ip := range ips {
		if !containsIP(cert.IPAddresses, ip) {
			return false
		}
	}
	return true
}
