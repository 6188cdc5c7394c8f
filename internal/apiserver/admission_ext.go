package apiserver

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/policy"
	"github.com/myriad-k8s/myriad/internal/admission/upstream"
	"github.com/myriad-k8s/myriad/internal/admission/webhook"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// extensionAdmission are the admission plugins users configure through
// the API: MutatingAdmissionWebhook, ValidatingAdmissionPolicy and
// ValidatingAdmissionWebhook (packages webhook and policy, on upstream's
// plugins). Their informers read the watch caches and start with the
// server (startExtensionAdmission).
type extensionAdmission struct {
	informers informers.SharedInformerFactory
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	webhooks  *webhook.Plugins
	policies  *policy.Plugin
}

// loopbackUser is who the plugins' in-process client acts as: the API
// server itself, as upstream's loopback client.
var loopbackUser = request.User{Name: "system:apiserver", Groups: []string{"system:masters", "system:authenticated"}}

// newExtensionAdmission builds the plugins; mutating goes after the
// built-in mutating plugins, validating (the policy, then the webhook, as
// upstream) after the built-in validating ones and before ResourceQuota.
func (s *Server) newExtensionAdmission() (mutating, validating []admission.Interface, err error) {
	u := loopbackUser
	cfg := upstream.InProcessConfig(s, &u)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("admission client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("admission dynamic client: %w", err)
	}
	f, err := upstream.InformerFactory(client, s.ListerWatcher)
	if err != nil {
		return nil, nil, err
	}
	ext := &extensionAdmission{informers: f, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))}
	objects := upstream.ObjectInterfaces(s.scheme)
	az := upstream.Authorizer(func() authz.Authorizer { return s.reviewers.authorizer })
	if ext.webhooks, err = webhook.New(webhook.Config{Informers: f, Client: client, Objects: objects, Authorizer: az, Stop: s.stop,
		Excluded: virtualResources()}); err != nil {
		return nil, nil, err
	}
	if ext.policies, err = policy.New(policy.Config{Informers: f, Client: client, Dynamic: dyn, RESTMapper: ext.mapper,
		Objects: objects, Authorizer: az, Stop: s.stop, Excluded: virtualResources()}); err != nil {
		return nil, nil, err
	}
	s.extAdmission = ext
	// Upstream's plugins record their metrics in component-base's
	// legacyregistry; this server's /metrics shows them.
	if err := s.metrics.Register(upstream.MetricsCollector()); err != nil {
		return nil, nil, fmt.Errorf("admission metrics: %w", err)
	}
	s.AddReadinessCheck("admission-webhooks", ext.webhooks.Ready)
	s.AddReadinessCheck("validating-admission-policies", ext.policies.Ready)
	return []admission.Interface{ext.webhooks.Mutating}, []admission.Interface{ext.policies, ext.webhooks.Validating}, nil
}

// virtualResources are the resources nothing stores (the reviews), which
// no webhook or policy may intercept, as upstream.
func virtualResources() []schema.GroupResource {
	return []schema.GroupResource{
		{Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
		{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	}
}

// discoveryResetInterval is how often the params' REST mapper forgets
// discovery, so that a policy's paramKind served after the mapper first
// looked (a custom resource) is found; upstream's kube-apiserver resets
// its admission REST mapper on the same period.
const discoveryResetInterval = 30 * time.Second

// startExtensionAdmission starts the plugins and their informers; they
// stop with the server, which waits for the informers.
func (s *Server) startExtensionAdmission() error {
	ext := s.extAdmission
	if ext == nil {
		return nil
	}
	if err := ext.policies.Start(); err != nil {
		return err
	}
	ext.informers.Start(s.stop)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		<-s.stop
		ext.informers.Shutdown()
	}()
	go func() {
		defer s.wg.Done()
		wait.Until(ext.mapper.Reset, discoveryResetInterval, s.stop)
	}()
	return nil
}
