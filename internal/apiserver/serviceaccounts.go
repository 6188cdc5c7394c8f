package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	saadmission "github.com/myriad-k8s/myriad/internal/admission/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/cache"
)

var serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")

// serviceAccountAdmission is the ServiceAccount admission plugin over the
// serviceaccounts cache, or nil when the server issues no tokens (its
// pods could not get their token volumes; the tests of other parts run
// so, without a serviceaccount controller to create "default").
func (s *Server) serviceAccountAdmission() *saadmission.Plugin {
	h, ok := s.handlers[serviceAccountsGVR]
	if !ok || s.cfg.ServiceAccounts == nil || s.cfg.ServiceAccounts.Signer == nil || s.cfg.ServiceAccounts.DisableAdmission {
		return nil
	}
	return saadmission.New(func(ctx context.Context, ns, name string, consistent bool) (*corev1.ServiceAccount, error) {
		rv := "0"
		if consistent {
			rv = ""
		}
		obj, err := h.cache.Get(ctx, h.objects.key(ns, name), rv)
		if cache.IsNotFound(err) {
			return nil, apierrors.NewNotFound(h.objects.gr, name)
		}
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.ServiceAccount), nil
	}, saadmission.Options{})
}
