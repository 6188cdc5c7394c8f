package registry

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options configures a Registry. The zero value is ready to use.
type Options struct {
	// Now is the clock table cells measure AGE against. Default time.Now;
	// tests inject a fixed clock so ages are deterministic.
	Now func() time.Time
}

// Registry is the immutable set of served resources. It is safe for
// concurrent use: nothing changes after New returns.
type Registry struct {
	resources []*Resource
	byGVR     map[schema.GroupVersionResource]*Resource
	byGVK     map[schema.GroupVersionKind]*Resource
}

// New returns the registry of every resource Myriad serves.
func New() (*Registry, error) { return NewWithOptions(Options{}) }

// NewWithOptions is New with explicit options.
func NewWithOptions(opts Options) (*Registry, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := clock(opts.Now)
	// Discovery order mirrors upstream: groups in the API server's group
	// priority order (core, apiregistration, apps, events, authentication, authorization, batch, certificates, networking, policy, rbac,
	// storage, admissionregistration, scheduling, coordination, node, discovery), resources
	// alphabetical within a group.
	rs := []*Resource{
		bindingResource(),
		componentStatusResource(),
		configMapResource(c),
		endpointsResource(c),
		coreEventResource(c),
		limitRangeResource(c),
		namespaceResource(c),
		nodeResource(c),
		persistentVolumeClaimResource(c),
		persistentVolumeResource(c),
		podResource(c),
		podTemplateResource(),
		replicationControllerResource(c),
		resourceQuotaResource(c),
		secretResource(c),
		serviceAccountResource(c),
		serviceResource(c),

		apiServiceResource(c),

		controllerRevisionResource(c),
		daemonSetResource(c),
		deploymentResource(c),
		replicaSetResource(c),
		statefulSetResource(c),

		eventsV1EventResource(c),

		selfSubjectReviewResource(),
		tokenReviewResource(),

		localSubjectAccessReviewResource(),
		selfSubjectAccessReviewResource(),
		selfSubjectRulesReviewResource(),
		subjectAccessReviewResource(),

		hpaV2Resource(c),
		hpaV1Resource(c),

		cronJobResource(c),
		jobResource(c),

		certificateSigningRequestResource(c),

		ingressClassResource(c),
		ingressResource(c),
		networkPolicyResource(c),

		podDisruptionBudgetResource(c),

		clusterRoleBindingResource(c),
		clusterRoleResource(c),
		roleBindingResource(c),
		roleResource(c),

		csiDriverResource(c),
		csiNodeResource(c),
		csiStorageCapacityResource(c),
		storageClassResource(c),
		volumeAttachmentResource(c),
		volumeAttributesClassResource(c),

		mutatingWebhookConfigurationResource(c),
		validatingAdmissionPolicyResource(c),
		validatingAdmissionPolicyBindingResource(c),
		validatingWebhookConfigurationResource(c),

		priorityClassResource(c),

		leaseResource(c),

		runtimeClassResource(c),

		endpointSliceResource(c),

		flowSchemaResource(c),
		priorityLevelConfigurationResource(c),

		crdResource(c),
	}
	reg := &Registry{
		resources: rs,
		byGVR:     make(map[schema.GroupVersionResource]*Resource, len(rs)),
		byGVK:     make(map[schema.GroupVersionKind]*Resource, len(rs)),
	}
	for _, r := range rs {
		if err := checkResource(r); err != nil {
			return nil, err
		}
		gvr := r.GroupVersionResource()
		if _, dup := reg.byGVR[gvr]; dup {
			return nil, fmt.Errorf("registry: %v registered twice", gvr)
		}
		reg.byGVR[gvr] = r
		reg.byGVK[r.GroupVersionKind()] = r
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if err := checkStorageVersions(reg, scheme); err != nil {
		return nil, err
	}
	return reg, nil
}

// checkResource catches wiring mistakes at startup rather than at the first
// request that touches the resource.
func checkResource(r *Resource) error {
	switch {
	case r.Kind == "" || r.Resource == "" || r.SingularName == "":
		return fmt.Errorf("registry: %v: kind and names are required", r.GroupVersionResource())
	case r.New == nil || r.Strategy == nil || r.Table == nil || r.SelectableFields == nil:
		return fmt.Errorf("registry: %v: New, Strategy, Table and SelectableFields are required", r.GroupVersionResource())
	case r.NewList == nil && slices.Contains(r.Verbs, "list"):
		return fmt.Errorf("registry: %v: NewList is required to serve list", r.GroupVersionResource())
	case r.HasSubresource("status") != (r.Status != nil):
		return fmt.Errorf("registry: %v: status subresource and Status strategy disagree", r.GroupVersionResource())
	case r.HasSubresource("approval") != (r.Approval != nil):
		return fmt.Errorf("registry: %v: approval subresource and Approval strategy disagree", r.GroupVersionResource())
	case r.HasSubresource("scale") != (r.Scale != nil):
		return fmt.Errorf("registry: %v: scale subresource and Scale accessor disagree", r.GroupVersionResource())
	case len(r.Table.Columns()) == 0:
		return fmt.Errorf("registry: %v: no table columns", r.GroupVersionResource())
	}
	return nil
}

// Resources returns every served resource in stable discovery order. The
// slice is a copy; the Resources themselves must not be modified.
func (g *Registry) Resources() []*Resource {
	return append([]*Resource(nil), g.resources...)
}

// Lookup finds a resource by group, version and plural resource name.
func (g *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := g.byGVR[gvr]
	return r, ok
}

// LookupResource finds a resource by group/version and plural name
// ("pods"), as found in a request path.
func (g *Registry) LookupResource(gv schema.GroupVersion, plural string) (*Resource, bool) {
	return g.Lookup(gv.WithResource(plural))
}

// LookupKind finds the resource serving a kind, e.g. to route an object
// decoded from a request body.
func (g *Registry) LookupKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	r, ok := g.byGVK[gvk]
	return r, ok
}

// GroupVersions returns the served group versions in discovery order, each
// once.
func (g *Registry) GroupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range g.resources {
		if !seen[r.GroupVersion] {
			seen[r.GroupVersion] = true
			out = append(out, r.GroupVersion)
		}
	}
	return out
}
