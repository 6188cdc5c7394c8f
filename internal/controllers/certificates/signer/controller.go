package signer

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "csrsigning"

// DefaultDuration is upstream's --cluster-signing-duration default.
const DefaultDuration = 365 * 24 * time.Hour

// Options configure the signer.
type Options struct {
	// CertFile and KeyFile are the PEM CA certificate and PKCS#8 key
	// certificates are issued from (kube-controller-manager's
	// --cluster-signing-cert-file and --cluster-signing-key-file; `myriad
	// up` passes its ca.crt and ca.key). Required.
	CertFile, KeyFile string
	// Duration is the longest validity issued (default DefaultDuration);
	// spec.expirationSeconds may ask for less.
	Duration time.Duration
}

// Descriptor registers the controller with the manager, which rebuilds New
// with the configured CA; without one New fails.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, func(c *controllerctx.Context) (*Controller, error) { return New(c, Options{}) })
}

// Controller is the CSR signer.
type Controller struct {
	reconcile.Base
	csrs   certlisters.CertificateSigningRequestLister
	issuer *issuer
}

// New loads the CA and registers on the shared CSR informer. The CA is
// read once: rotating it means restarting the controller manager.
func New(c *controllerctx.Context, opts Options) (*Controller, error) {
	if opts.CertFile == "" || opts.KeyFile == "" {
		return nil, errors.New("signer: the CA certificate and key files are required")
	}
	ca, key, err := pki.LoadCA(opts.CertFile, opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("signer: %w", err)
	}
	if opts.Duration <= 0 {
		opts.Duration = DefaultDuration
	}
	return newWith(c, ca, key, opts.Duration)
}

func newWith(c *controllerctx.Context, ca *x509.Certificate, key crypto.Signer, maxDuration time.Duration) (*Controller, error) {
	inf := c.Informers.Certificates().V1().CertificateSigningRequests()
	ctrl := &Controller{csrs: inf.Lister(), issuer: &issuer{ca: ca, key: key, maxDuration: maxDuration}}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.issuer.now = ctrl.Clock.Now
	ctrl.Synced = []cache.InformerSynced{inf.Informer().HasSynced}
	if err := reconcile.Watch(inf.Informer(), reconcile.Adds|reconcile.Updates, ctrl.Enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(csr.Status.Certificate) > 0 || !certificates.IsApproved(csr) || certificates.HasTrueCondition(csr, certificatesv1.CertificateFailed) {
		return nil
	}
	req, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("parsing the request of CSR %s: %w", name, err)
	}
	known, err := certificates.ValidateForSigner(csr.Spec.SignerName, req, csr.Spec.Usages)
	if !known {
		return nil
	}
	csr = csr.DeepCopy()
	if err != nil {
		now := metav1.NewTime(c.Clock.Now())
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
			Reason: "SignerValidationFailure", Message: err.Error(), LastUpdateTime: now,
		})
		return c.updateStatus(ctx, csr, "adding the Failed condition to")
	}
	cert, err := c.issuer.issue(req, csr.Spec.Usages, csr.Spec.ExpirationSeconds)
	if err != nil {
		return fmt.Errorf("signing CSR %s: %w", name, err)
	}
	csr.Status.Certificate = cert
	return c.updateStatus(ctx, csr, "writing the certificate of")
}

func (c *Controller) updateStatus(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, what string) error {
	_, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s CSR %s: %w", what, csr.Name, err)
	}
	return nil
}
