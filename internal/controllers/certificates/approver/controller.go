package approver

import (
	"context"
	"crypto/x509"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "csrapproving"

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, func(c *controllerctx.Context) (*Controller, error) {
		return New(c, SubjectAccessReviewer{Client: c.Client})
	})
}

// recognizer is a kind of request the approver knows, the permission its
// requestor needs, and the message an approval carries (upstream's).
type recognizer struct {
	recognize   func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
	subresource string
	message     string
}

// recognizers are tried in order: a node renewing its own certificate
// first, so it needs only selfnodeclient.
var recognizers = []recognizer{
	{isSelfNodeClient, SelfNodeClient, "Auto approving self kubelet client certificate after SubjectAccessReview."},
	{isNodeClient, NodeClient, "Auto approving kubelet client certificate after SubjectAccessReview."},
}

func isNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName &&
		certificates.ValidateKubeletClient(req, csr.Spec.Usages) == nil
}

func isSelfNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClient(csr, req)
}

// Controller is the CSR approver.
type Controller struct {
	reconcile.Base
	csrs certlisters.CertificateSigningRequestLister
	auth Authorizer
}

// New registers on the shared CSR informer; auth decides who may have
// node client certificates approved.
func New(c *controllerctx.Context, auth Authorizer) (*Controller, error) {
	inf := c.Informers.Certificates().V1().CertificateSigningRequests()
	ctrl := &Controller{csrs: inf.Lister(), auth: auth}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
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
	if len(csr.Status.Certificate) > 0 {
		return nil
	}
	if approved, denied := certificates.ApprovalState(csr); approved || denied {
		return nil
	}
	req, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("parsing the request of CSR %s: %w", name, err)
	}
	var tried []string
	for _, r := range recognizers {
		if !r.recognize(csr, req) {
			continue
		}
		tried = append(tried, r.subresource)
		ok, err := c.auth.Authorize(ctx, &csr.Spec, r.subresource)
		if err != nil {
			return fmt.Errorf("authorizing CSR %s as %s: %w", name, r.subresource, err)
		}
		if !ok {
			continue
		}
		csr = csr.DeepCopy()
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "AutoApproved", Message: r.message,
		})
		_, err = c.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("approving CSR %s: %w", name, err)
		}
		return nil
	}
	if len(tried) > 0 {
		// Recognized but not authorized: retried quietly with backoff,
		// as upstream's ignorable error, in case a grant appears.
		return fmt.Errorf("CSR %s recognized as %s but not authorized: %w", name, tried, reconcile.ErrRequeue)
	}
	return nil
}
