package certsubject

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// mastersGroup is the superuser group the plugin keeps out of requests.
const mastersGroup = "system:masters"

var csrResource = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")

// Plugin refuses CSR creates asking the API server client signer for
// system:masters.
type Plugin struct{ admission.Handler }

var _ admission.ValidationInterface = (*Plugin)(nil)

// New is the plugin; it handles creates only, as upstream's.
func New() *Plugin { return &Plugin{Handler: admission.NewHandler(admission.Create)} }

// Validate implements admission.ValidationInterface.
func (p *Plugin) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Resource.GroupResource() != csrResource.GroupResource() || a.Subresource != "" {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return forbidden(a, errors.New("failed to parse CSR: PEM block type must be CERTIFICATE REQUEST"))
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return forbidden(a, fmt.Errorf("failed to parse CSR: %w", err))
	}
	for _, g := range req.Subject.Organization {
		if g == mastersGroup {
			return forbidden(a, fmt.Errorf("use of %s signer with %s group is not allowed", csr.Spec.SignerName, mastersGroup))
		}
	}
	return nil
}

func forbidden(a *admission.Attributes, err error) error {
	return apierrors.NewForbidden(a.GroupResource(), a.Name, err)
}
