package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// File names of the service-account signing key pair inside the
// credentials directory (kubeadm's names).
const (
	ServiceAccountKeyFile       = "sa.key"
	ServiceAccountPublicKeyFile = "sa.pub"
)

// serviceAccountKeyBits is the size of a created signing key. RSA rather
// than the CA's ECDSA: the key is verified on every request that carries a
// ServiceAccount token, and an RSA-2048 verification (public exponent
// 65537) costs a fraction of a P-256 one; RS256 is also the one algorithm
// every OIDC relying party accepts (cloud workload-identity federation
// among them) and upstream's default. Signing is slower, but tokens are
// signed once per TokenRequest, not per request.
const serviceAccountKeyBits = 2048

// EnsureServiceAccountKey returns the private key that signs ServiceAccount
// tokens, kept in dir as sa.key (PKCS#8) with its public half in sa.pub
// (PKIX), creating an RSA-2048 pair on first use. An existing key is never
// replaced — every token issued so far is signed with it; a missing sa.pub
// beside an existing sa.key is rewritten from the key.
func EnsureServiceAccountKey(dir string) (crypto.Signer, error) {
	keyPath, pubPath := filepath.Join(dir, ServiceAccountKeyFile), filepath.Join(dir, ServiceAccountPublicKeyFile)
	data, err := readFileIfExists(keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	var key crypto.Signer
	if data != nil {
		if key, err = ParsePrivateKey(data, keyPath); err != nil {
			return nil, err
		}
	} else {
		rsaKey, err := rsa.GenerateKey(rand.Reader, serviceAccountKeyBits)
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(rsaKey)
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		if err := writeFileAtomic(keyPath, pemBlock("PRIVATE KEY", der), 0o600); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		key = rsaKey
	}
	if _, err := os.Stat(pubPath); err == nil {
		return key, nil
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := writeFileAtomic(pubPath, pemBlock("PUBLIC KEY", der), 0o644); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return key, nil
}

// LoadPrivateKey reads a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC),
// as upstream's --service-account-signing-key-file and the controller
// manager's --service-account-private-key-file accept.
func LoadPrivateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return ParsePrivateKey(data, path)
}

// ParsePrivateKey parses the first private key PEM block of data; path
// names it in errors. Only RSA and ECDSA keys are accepted: the token
// signers and verifiers know RS256 and ES256/384/512.
func ParsePrivateKey(data []byte, path string) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("pki: %s: no private key PEM block", path)
		}
		var parsed any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			parsed, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pki: %s: %w", path, err)
		}
		switch k := parsed.(type) {
		case *rsa.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
			return k, nil
		default:
			return nil, fmt.Errorf("pki: %s: key of type %T cannot sign tokens (RSA or ECDSA required)", path, parsed)
		}
	}
}

// LoadPublicKeys reads every public key in a PEM file — PUBLIC KEY and RSA
// PUBLIC KEY blocks, certificates, and the public halves of private keys —
// as upstream's --service-account-key-file, which may name several files
// each holding several keys (the keys of tokens still in use after a
// rotation).
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	var keys []crypto.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var pub crypto.PublicKey
		switch block.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				pub = cert.PublicKey
			}
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			var key crypto.Signer
			if key, err = ParsePrivateKey(pem.EncodeToMemory(block), path); err == nil {
				pub = key.Public()
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pki: %s: %w", path, err)
		}
		switch pub.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
			keys = append(keys, pub)
		default:
			return nil, fmt.Errorf("pki: %s: public key of type %T cannot verify tokens", path, pub)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("pki: %s: no public key found", path)
	}
	return keys, nil
}
