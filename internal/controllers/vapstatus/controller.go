package vapstatus

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	listersv1 "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "validatingadmissionpolicy-status"

// FieldManager owns status.typeChecking and status.observedGeneration.
const FieldManager = "validatingadmissionpolicy-status"

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor { return controllerctx.Describe(Name, 1, New) }

// Controller writes each policy's type-checking result.
type Controller struct {
	reconcile.Base
	policies listersv1.ValidatingAdmissionPolicyLister
	checker  *validating.TypeChecker
}

// New registers the policy informer's handlers.
func New(c *controllerctx.Context) (*Controller, error) {
	inf := c.Informers.Admissionregistration().V1().ValidatingAdmissionPolicies()
	disc := memory.NewMemCacheClient(c.Client.Discovery())
	ctrl := &Controller{
		policies: inf.Lister(),
		// The checker resets the mapper itself when a kind is missing (a
		// custom resource served after it first looked).
		checker: &validating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: c.Client.Discovery()},
			RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(disc),
		},
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{inf.Informer().HasSynced}
	if err := reconcile.Watch(inf.Informer(), reconcile.Adds|reconcile.Updates, func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			ctrl.Queue.Add(p.Name)
		}
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	p, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.Generation <= p.Status.ObservedGeneration {
		return nil
	}
	warnings := c.checker.Check(p)
	cfgs := make([]*applyv1.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		cfgs = append(cfgs, applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	apply := applyv1.ValidatingAdmissionPolicy(p.Name).WithStatus(applyv1.ValidatingAdmissionPolicyStatus().
		WithObservedGeneration(p.Generation).
		WithTypeChecking(applyv1.TypeChecking().WithExpressionWarnings(cfgs...)))
	_, err = c.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, apply,
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the type checking of %s: %w", name, err)
	}
	return nil
}
