package cleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "csrcleaner"

// Upstream's intervals.
const (
	// pollInterval is how often all requests are checked.
	pollInterval = time.Hour
	// approvedExpiration, deniedExpiration: how long an issued or a
	// denied (or failed) request is kept after its condition.
	approvedExpiration = time.Hour
	deniedExpiration   = time.Hour
	// pendingExpiration: how long a request nobody acted on is kept.
	pendingExpiration = 24 * time.Hour
)

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, New)
}

// Controller is the CSR cleaner.
type Controller struct {
	client kubernetes.Interface
	csrs   certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	clock  clock.WithTicker
	log    *slog.Logger
}

// New uses the shared CSR informer.
func New(c *controllerctx.Context) (*Controller, error) {
	inf := c.Informers.Certificates().V1().CertificateSigningRequests()
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{
		client: c.Client,
		csrs:   inf.Lister(),
		synced: inf.Informer().HasSynced,
		clock:  clk,
		log:    c.Logger.With("controller", Name),
	}, nil
}

// Run cleans at once and then every pollInterval until ctx is done.
func (c *Controller) Run(ctx context.Context, _ int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	t := c.clock.NewTicker(pollInterval)
	defer t.Stop()
	for {
		c.clean(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// clean is one pass over every request.
func (c *Controller) clean(ctx context.Context) {
	csrs, err := c.csrs.List(labels.Everything())
	if err != nil {
		c.log.Error("listing CSRs", "err", err)
		return
	}
	now := c.clock.Now()
	for _, csr := range csrs {
		why, ok := expired(csr, now)
		if !ok {
			continue
		}
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &csr.UID},
		})
		switch {
		case err == nil:
			c.log.Info("deleted CSR", "csr", csr.Name, "reason", why)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			c.log.Error("deleting CSR", "csr", csr.Name, "err", err)
		}
	}
}

// expired reports whether csr is due for deletion at now, and why.
func expired(csr *certificatesv1.CertificateSigningRequest, now time.Time) (string, bool) {
	older := func(t metav1.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t.Time) > d }
	issued := len(csr.Status.Certificate) > 0
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			if issued && older(c.LastUpdateTime, approvedExpiration) {
				return "issued more than an hour ago", true
			}
			if issued {
				if notAfter, err := certificateNotAfter(csr.Status.Certificate); err == nil && now.After(notAfter) {
					return "issued certificate expired", true
				}
			}
		case certificatesv1.CertificateDenied:
			if older(c.LastUpdateTime, deniedExpiration) {
				return "denied more than an hour ago", true
			}
		case certificatesv1.CertificateFailed:
			if older(c.LastUpdateTime, deniedExpiration) {
				return "failed more than an hour ago", true
			}
		}
	}
	if len(csr.Status.Conditions) == 0 && older(csr.CreationTimestamp, pendingExpiration) {
		return "pending for more than a day", true
	}
	return "", false
}

// certificateNotAfter is the expiry of the first certificate in data.
func certificateNotAfter(data []byte) (time.Time, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return time.Time{}, errors.New("the issued certificate is not PEM")
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing the issued certificate: %w", err)
	}
	if len(certs) == 0 {
		return time.Time{}, errors.New("no certificate in the issued PEM block")
	}
	return certs[0].NotAfter, nil
}
