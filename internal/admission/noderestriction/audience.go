package noderestriction

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
)

// checkAudience is upstream's ServiceAccountNodeAudienceRestriction (on by
// default since v1.33): a node may request a token only for an audience
// the pod uses — a projected serviceAccountToken volume's, or a token
// request of the CSI driver of one of its volumes — unless the authorizer
// allows the node the audience explicitly. Upstream also translates
// in-tree volumes to their CSI drivers; Myriad serves no in-tree volume
// plugins, so that step is left out.
func (p *Plugin) checkAudience(ctx context.Context, tr *authenticationv1.TokenRequest, pod *corev1.Pod, a *admission.Attributes) error {
	audience := ""
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return errors.New("node may only request 0 or 1 audiences")
	}
	found, err := p.podReferencesAudience(ctx, pod, audience)
	if err != nil {
		return fmt.Errorf("error validating audience %q: %w", audience, err)
	}
	if found {
		return nil
	}
	if p.cfg.Authorizer == nil {
		return fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.User.Name)
	}
	d, _, err := p.cfg.Authorizer.Authorize(ctx, authz.Attributes{
		User:              a.User,
		Verb:              "request-serviceaccounts-token-audience",
		IsResourceRequest: true,
		Namespace:         a.Namespace,
		APIVersion:        "v1",
		Resource:          audience,
		Name:              a.Name,
	})
	if d == authz.DecisionAllow {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audience %q not found in pod spec volume, error authorizing %s to request tokens for this audience: %w", audience, a.User.Name, err)
	}
	return fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.User.Name)
}

func (p *Plugin) podReferencesAudience(ctx context.Context, pod *corev1.Pod, audience string) (bool, error) {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
					return true, nil
				}
			}
		}
		var driver string
		var err error
		switch {
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			driver, err = p.csiDriverOfClaim(ctx, pod.Namespace, ephemeral.VolumeClaimName(pod, v))
		case v.PersistentVolumeClaim != nil:
			driver, err = p.csiDriverOfClaim(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.CSI != nil:
			driver = v.CSI.Driver
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if driver == "" {
			continue
		}
		has, err := p.csiDriverHasAudience(ctx, driver, audience)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if has {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

func (p *Plugin) csiDriverOfClaim(ctx context.Context, namespace, claim string) (string, error) {
	obj, err := p.get(ctx, pvcsGVR, namespace, claim)
	if err != nil {
		return "", err
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return "", fmt.Errorf("unexpected type %T", obj)
	}
	obj, err = p.get(ctx, pvsGVR, "", pvc.Spec.VolumeName)
	if err != nil {
		return "", err
	}
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return "", fmt.Errorf("unexpected type %T", obj)
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, nil
	}
	return "", nil
}

func (p *Plugin) csiDriverHasAudience(ctx context.Context, driver, audience string) (bool, error) {
	obj, err := p.get(ctx, csiDriversGVR, "", driver)
	if err != nil {
		return false, err
	}
	d, ok := obj.(*storagev1.CSIDriver)
	if !ok {
		return false, fmt.Errorf("unexpected type %T", obj)
	}
	for _, r := range d.Spec.TokenRequests {
		if r.Audience == audience {
			return true, nil
		}
	}
	return false, nil
}
