package kubeletclient

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certReloader serves the client certificate from its files, re-reading
// them when either changes on disk, as upstream's ReloadTLSFiles: a
// certificate renewed in place (myriad up re-issues it before expiry)
// reaches new kubelet connections without a restart.
type certReloader struct {
	certFile, keyFile string

	mu struct {
		sync.Mutex
		pair              *tls.Certificate
		certMod, keyMod   time.Time
		certSize, keySize int64
	}
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.get(); err != nil {
		return nil, err
	}
	return r, nil
}

// GetClientCertificate is tls.Config's hook; it runs once per handshake,
// so the cost is two stats per new kubelet connection.
func (r *certReloader) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.get()
}

func (r *certReloader) get() (*tls.Certificate, error) {
	cs, err1 := os.Stat(r.certFile)
	ks, err2 := os.Stat(r.keyFile)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err1 != nil || err2 != nil {
		if r.mu.pair != nil {
			return r.mu.pair, nil // files gone mid-rotation: keep the last good pair
		}
		return nil, fmt.Errorf("kubeletclient: client certificate: %v %v", err1, err2)
	}
	if r.mu.pair != nil && cs.ModTime().Equal(r.mu.certMod) && ks.ModTime().Equal(r.mu.keyMod) &&
		cs.Size() == r.mu.certSize && ks.Size() == r.mu.keySize {
		return r.mu.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.mu.pair != nil {
			return r.mu.pair, nil // a half-written pair: keep the last good one until both land
		}
		return nil, fmt.Errorf("kubeletclient: client certificate: %w", err)
	}
	r.mu.pair = &pair
	r.mu.certMod, r.mu.keyMod, r.mu.certSize, r.mu.keySize = cs.ModTime(), ks.ModTime(), cs.Size(), ks.Size()
	return &pair, nil
}
