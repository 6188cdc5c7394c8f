package policy

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/myriad-k8s/myriad/internal/admission/upstream"
)

// Config is what the plugin needs from the API server.
type Config struct {
	// Informers feed policies, bindings and namespaces (see
	// upstream.InformerFactory). The caller starts them. Required.
	Informers informers.SharedInformerFactory
	// Client reads namespaces the informer has not seen yet. Required.
	Client kubernetes.Interface
	// Dynamic and RESTMapper find and watch params of any kind. Required.
	Dynamic    dynamic.Interface
	RESTMapper meta.RESTMapper
	// Objects are the object interfaces over the server's scheme.
	Objects apiadmission.ObjectInterfaces
	// Authorizer answers the CEL `authorizer` variable. Required.
	Authorizer authorizer.UnconditionalAuthorizer
	// Stop ends the plugin's background work (server shutdown). Required.
	Stop <-chan struct{}
	// Excluded are resources no policy may intercept (the reviews).
	Excluded []schema.GroupResource
}

// Plugin is ValidatingAdmissionPolicy, ready for the chain.
type Plugin struct {
	*upstream.Validating
	plugin *validating.Plugin
	ready  []func() bool
}

// Start starts the plugin's policy source, which compiles policies as
// they change (off the request path) and runs the params' informers,
// until Config.Stop is closed. It must be called before the plugin
// admits anything, and once.
func (p *Plugin) Start() error {
	if err := p.plugin.ValidateInitialization(); err != nil {
		return fmt.Errorf("validating admission policy: %w", err)
	}
	return nil
}

// Ready reports whether the policies and bindings informers have synced.
func (p *Plugin) Ready() bool {
	for _, r := range p.ready {
		if !r() {
			return false
		}
	}
	return true
}

// New builds the plugin; Start starts it.
func New(cfg Config) (*Plugin, error) {
	if cfg.Informers == nil || cfg.Client == nil || cfg.Dynamic == nil || cfg.RESTMapper == nil ||
		cfg.Objects == nil || cfg.Authorizer == nil || cfg.Stop == nil {
		return nil, errors.New("policy: every Config field is required")
	}
	p, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("validating admission policy: %w", err)
	}
	p.SetExternalKubeInformerFactory(cfg.Informers)
	p.SetExternalKubeClientSet(cfg.Client)
	p.SetDynamicClient(cfg.Dynamic)
	p.SetRESTMapper(cfg.RESTMapper)
	p.SetUnconditionalAuthorizer(cfg.Authorizer)
	p.SetDrainedNotification(cfg.Stop)
	p.SetExcludedAdmissionResources(cfg.Excluded)
	arv1 := cfg.Informers.Admissionregistration().V1()
	// A policy acts only through a binding: none, nothing to do.
	bound := &upstream.Configured{}
	if err := bound.Watch(arv1.ValidatingAdmissionPolicyBindings().Informer()); err != nil {
		return nil, err
	}
	return &Plugin{
		plugin:     p,
		Validating: &upstream.Validating{Plugin: p, Objects: cfg.Objects, Configured: bound},
		ready: []func() bool{
			cfg.Informers.Core().V1().Namespaces().Informer().HasSynced,
			arv1.ValidatingAdmissionPolicies().Informer().HasSynced,
			arv1.ValidatingAdmissionPolicyBindings().Informer().HasSynced,
		},
	}, nil
}
