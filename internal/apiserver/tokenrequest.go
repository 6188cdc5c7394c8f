package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilptr "k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ServiceAccountConfig is what the server needs to issue ServiceAccount
// tokens (serviceaccounts/token) and to give pods their token volumes
// (the ServiceAccount admission plugin).
type ServiceAccountConfig struct {
	// Signer signs bound tokens under the issuer. Required.
	Signer *serviceaccount.Signer
	// APIAudiences are the audiences of a TokenRequest that names none
	// (upstream's --api-audiences; default the signer's issuer).
	APIAudiences []string
	// MaxExpiration caps a requested lifetime
	// (--service-account-max-token-expiration; zero: no cap).
	MaxExpiration time.Duration
	// DisableAdmission leaves the ServiceAccount admission plugin out
	// (--disable-admission-plugins=ServiceAccount), for a server whose
	// namespaces get no default account because no controllers run.
	DisableAdmission bool
}

// Token lifetimes, as upstream's TokenRequest.
const (
	minTokenSeconds     = 10 * 60
	maxTokenSeconds     = 1 << 32
	defaultTokenSeconds = 60 * 60
	// warnOnlyTokenSeconds is what the kubelet asks for a projected
	// kube-api-access token (the admission plugin writes it in the pod):
	// such a pod-bound token for the API server is valid a year but
	// flagged stale (warnafter) after the hour, so clients that do not
	// reload their token keep working while their operators are warned.
	warnOnlyTokenSeconds = 3607
	extendedTokenSeconds = 365 * 24 * 60 * 60
)

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// serviceAccountHooks: the token subresource, when the server has a signer.
func (s *Server) serviceAccountHooks(h *resourceHandler) {
	if s.cfg.ServiceAccounts == nil || s.cfg.ServiceAccounts.Signer == nil {
		return
	}
	if h.hooks.subresources == nil {
		h.hooks.subresources = map[string]subresourceHandler{}
	}
	h.hooks.subresources["token"] = (*Server).createToken
}

// createToken serves POST serviceaccounts/<name>/token (TokenRequest), as
// upstream's TokenREST.Create.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	obj, ok := s.subresourceBody(w, r, h, info, request.VerbCreate, tokenRequestGVK, &authenticationv1.TokenRequest{})
	if !ok {
		return
	}
	req := obj.(*authenticationv1.TokenRequest)
	ctx := r.Context()
	attrs := h.attributes(ctx, admission.Create, info.Namespace, info.Name, "token", req, nil, writeOptionsFrom(r))
	attrs.Kind = tokenRequestGVK
	if err := s.admission.Admit(ctx, attrs); err != nil {
		s.writeError(w, r, err)
		return
	}
	warning, err := s.issueToken(ctx, h, info.Namespace, info.Name, req)
	if err == nil {
		err = s.admission.Validate(ctx, attrs)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if warning != "" {
		addWarning(w, warning)
	}
	req.SetGroupVersionKind(tokenRequestGVK)
	choice, ok := s.negotiateOutput(r, false)
	if !ok {
		choice = mediaChoice{info: s.codecs.json}
	}
	s.writeObject(w, r, http.StatusCreated, choice, req)
}

// issueToken validates and defaults req for ServiceAccount ns/name, signs
// the token and fills req.Status. It returns a warning for the client
// when the lifetime was shortened.
func (s *Server) issueToken(ctx context.Context, h *resourceHandler, ns, name string, req *authenticationv1.TokenRequest) (string, error) {
	cfg := s.cfg.ServiceAccounts
	gk := tokenRequestGVK.GroupKind()
	if req.Name != "" && req.Name != name {
		return "", apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != ns {
		return "", apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	// Defaults (v1's SetDefaults_TokenRequestSpec and the REST's audiences).
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = utilptr.To(int64(defaultTokenSeconds))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = s.apiAudiences()
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if exp := *req.Spec.ExpirationSeconds; exp < minTokenSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	} else if exp > maxTokenSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	if len(errs) > 0 {
		return "", apierrors.NewInvalid(gk, name, errs)
	}

	saObj, _, err := h.objects.get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	bound := serviceaccount.BoundToken{ServiceAccount: saObj.(*corev1.ServiceAccount), Audiences: req.Spec.Audiences}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := s.bindToken(ctx, &bound, ns, name, ref); err != nil {
			return "", err
		}
	}

	var warning string
	if max := int64(cfg.MaxExpiration / time.Second); max > 0 && *req.Spec.ExpirationSeconds > max {
		warning = fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max)
		req.Spec.ExpirationSeconds = utilptr.To(max)
	}
	now := s.clock.Now()
	exp := *req.Spec.ExpirationSeconds
	if bound.Pod != nil && exp == warnOnlyTokenSeconds && s.onlyAPIAudiences(req.Spec.Audiences) {
		bound.WarnAfter = now.Add(time.Duration(exp) * time.Second)
		exp = extendedTokenSeconds
	}
	bound.Expiration = time.Duration(exp) * time.Second
	token, _, err := cfg.Signer.Sign(bound, now)
	if err != nil {
		return "", apierrors.NewInternalError(err)
	}
	req.Status = authenticationv1.TokenRequestStatus{
		Token: token,
		// The requested lifetime even when extended: clients refresh on it.
		ExpirationTimestamp: metav1.NewTime(now.Truncate(time.Second).Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)),
	}
	return warning, nil
}

// bindToken looks up the object a TokenRequest binds its token to, in the
// ServiceAccount's namespace, and checks its uid.
func (s *Server) bindToken(ctx context.Context, bound *serviceaccount.BoundToken, ns, saName string, ref *authenticationv1.BoundObjectReference) error {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		obj, err := s.getStored(ctx, corev1.SchemeGroupVersion.WithResource("pods"), ns, ref.Name)
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if pod.Spec.ServiceAccountName != saName {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
		}
		bound.Pod, uid = pod, string(pod.UID)
		if pod.Spec.NodeName != "" {
			// The node only adds information to the token: the watch
			// cache will do, and a node that is gone leaves it out.
			nodeObj, err := s.GetObject(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", pod.Spec.NodeName, "0")
			if apierrors.IsNotFound(err) {
				nodeObj, err = s.GetObject(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", pod.Spec.NodeName, "")
			}
			switch {
			case err == nil:
				bound.Node = nodeObj.(*corev1.Node)
			case !apierrors.IsNotFound(err):
				return apierrors.NewInternalError(fmt.Errorf("failed to get node %q of pod %s/%s: %w", pod.Spec.NodeName, ns, pod.Name, err))
			}
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		obj, err := s.getStored(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", ref.Name)
		if err != nil {
			return err
		}
		bound.Node, uid = obj.(*corev1.Node), string(obj.(*corev1.Node).UID)
	case gvk.Group == "" && gvk.Kind == "Secret":
		obj, err := s.getStored(ctx, corev1.SchemeGroupVersion.WithResource("secrets"), ns, ref.Name)
		if err != nil {
			return err
		}
		bound.Secret, uid = obj.(*corev1.Secret), string(obj.(*corev1.Secret).UID)
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}

// getStored reads ns/name of gvr from the store, with the resource's 404.
func (s *Server) getStored(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (any, error) {
	h, ok := s.handlers[gvr]
	if !ok {
		return nil, errors.New("apiserver: " + gvr.String() + " is not served")
	}
	obj, _, err := h.objects.get(ctx, ns, name)
	return obj, err
}

func (s *Server) apiAudiences() []string {
	if auds := s.cfg.ServiceAccounts.APIAudiences; len(auds) > 0 {
		return slices.Clone(auds)
	}
	return []string{s.cfg.ServiceAccounts.Signer.Issuer()}
}

// onlyAPIAudiences reports whether every audience is the API server's.
func (s *Server) onlyAPIAudiences(auds []string) bool {
	api := s.apiAudiences()
	for _, a := range auds {
		if !slices.Contains(api, a) {
			return false
		}
	}
	return true
}
