package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// namespaceNodeLease is where kubelets keep their Leases.
const namespaceNodeLease = "kube-node-lease"

// Server is what the authorizer needs of the apiserver: its objects, and a
// way to hold /readyz until the graph is complete. apiserver.Server
// satisfies it.
type Server interface {
	Source
	AddReadinessCheck(name string, ready func() bool)
}

// Config configures New. Zero values take the defaults stated.
type Config struct {
	// Logger receives the graph's progress; slog.Default() if nil.
	Logger *slog.Logger
}

// Authorizer is the Node authorization mode. It is safe for concurrent
// use. Start runs the graph's reflectors; Stop ends them.
type Authorizer struct {
	// rules are the system:node role's, for the requests the graph does
	// not subdivide.
	rules []rule
	graph *Graph
	pop   *populator
	log   *slog.Logger
}

var (
	_ authz.Authorizer   = (*Authorizer)(nil)
	_ authz.RuleResolver = (*Authorizer)(nil)
)

// New returns the Node authorizer over srv's objects and registers the
// readiness check "node-authorizer" that passes once the graph has listed
// every resource it is built from. Call Start to build the graph (before
// or after the server's Start: the reflectors retry until its caches
// answer) and Stop on shutdown.
func New(srv Server, cfg Config) (*Authorizer, error) {
	a, err := NewWithSource(srv, cfg)
	if err != nil {
		return nil, err
	}
	srv.AddReadinessCheck("node-authorizer", a.HasSynced)
	return a, nil
}

// NewWithSource is New without the readiness check, for callers that wait
// on HasSynced themselves.
func NewWithSource(src Source, cfg Config) (*Authorizer, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	g := NewGraph()
	pop, err := newPopulator(g, src, log)
	if err != nil {
		return nil, err
	}
	return &Authorizer{graph: g, pop: pop, log: log, rules: nodeRules()}, nil
}

// Start starts building and maintaining the graph; it returns at once.
// The graph stops when ctx ends or Stop is called.
func (a *Authorizer) Start(ctx context.Context) { a.pop.start(ctx) }

// Stop ends the graph's reflectors and waits for them. It is idempotent.
func (a *Authorizer) Stop() { a.pop.stop() }

// HasSynced reports whether the graph holds every object that existed
// when it started.
func (a *Authorizer) HasSynced() bool { return a.pop.synced() }

// Graph is the authorizer's graph (for statistics).
func (a *Authorizer) Graph() *Graph { return a.graph }

// errNotSynced answers a request the graph cannot allow yet because it is
// still being built: 429 with Retry-After, which client-go retries, so a
// kubelet that reaches a server that has just restarted waits instead of
// failing (a 403 would fail its volume mounts and token requests).
var errNotSynced = apierrors.NewTooManyRequests("the node authorizer is still building its graph, please try again later", 1)

func noRelationship(nodeName string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", nodeName)
}

// RulesFor says, as upstream, that a node's permissions cannot be listed.
func (a *Authorizer) RulesFor(_ context.Context, user *request.User, _ string) ([]authz.ResourceRule, []authz.NonResourceRule, bool, error) {
	if _, isNode := Identity(user); isNode {
		return nil, nil, true, errors.New("node authorizer does not support user rule resolution")
	}
	return nil, nil, false, nil
}

// Authorize decides a node's request as upstream's NodeAuthorizer: the
// resources it subdivides by the graph or by name, every other request by
// the static rules of the system:node role. Anyone who is not a node gets
// no opinion.
func (a *Authorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	nodeName, isNode := Identity(attrs.User)
	if !isNode {
		return authz.DecisionNoOpinion, "", nil
	}
	if nodeName == "" {
		return authz.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", attrs.UserName()), nil
	}
	if attrs.IsResourceRequest {
		switch attrs.APIGroup {
		case "":
			switch attrs.Resource {
			case "secrets":
				return a.readNamespacedObject(nodeName, kindSecret, attrs)
			case "configmaps":
				return a.readNamespacedObject(nodeName, kindConfigMap, attrs)
			case "persistentvolumeclaims":
				if attrs.Subresource == "status" {
					return a.statusUpdate(nodeName, kindPVC, attrs)
				}
				return a.get(nodeName, kindPVC, attrs)
			case "persistentvolumes":
				return a.get(nodeName, kindPV, attrs)
			case "serviceaccounts":
				return a.serviceAccount(nodeName, attrs)
			case "nodes":
				return a.node(nodeName, attrs)
			case "pods":
				return a.pod(nodeName, attrs)
			}
		case "resource.k8s.io":
			switch attrs.Resource {
			case "resourceclaims":
				return a.get(nodeName, kindResourceClaim, attrs)
			case "resourceslices":
				return a.resourceSlice(nodeName, attrs)
			}
		case "storage.k8s.io":
			switch attrs.Resource {
			case "volumeattachments":
				return a.get(nodeName, kindVolumeAttachment, attrs)
			case "csinodes":
				return a.csiNode(nodeName, attrs)
			}
		case "coordination.k8s.io":
			if attrs.Resource == "leases" {
				return a.lease(nodeName, attrs)
			}
		}
	}
	if staticRulesAllow(a.rules, attrs) {
		return authz.DecisionAllow, "", nil
	}
	return authz.DecisionNoOpinion, "", nil
}

// statusUpdate: update/patch of the status of an object related to the node.
func (a *Authorizer) statusUpdate(nodeName string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case request.VerbUpdate, request.VerbPatch:
	default:
		return authz.DecisionNoOpinion, "can only get/update/patch this type", nil
	}
	if attrs.Subresource != "status" {
		return authz.DecisionNoOpinion, "can only update status subresource", nil
	}
	return a.related(nodeName, k, attrs)
}

// get: a get of one object related to the node.
func (a *Authorizer) get(nodeName string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Verb != request.VerbGet {
		return authz.DecisionNoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.Subresource != "" {
		return authz.DecisionNoOpinion, "cannot get subresource", nil
	}
	return a.related(nodeName, k, attrs)
}

// readNamespacedObject: get, or list/watch narrowed to one name, of a
// namespaced object related to the node.
func (a *Authorizer) readNamespacedObject(nodeName string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case request.VerbGet, request.VerbList, request.VerbWatch:
	default:
		return authz.DecisionNoOpinion, "can only read resources of this type", nil
	}
	if attrs.Subresource != "" {
		return authz.DecisionNoOpinion, "cannot read subresource", nil
	}
	if attrs.Namespace == "" {
		return authz.DecisionNoOpinion, "can only read namespaced object of this type", nil
	}
	return a.related(nodeName, k, attrs)
}

// related allows a request for the named object if the graph has a path
// from it to the node.
func (a *Authorizer) related(nodeName string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Name == "" {
		return authz.DecisionNoOpinion, "No Object name found", nil
	}
	return a.pathDecision(nodeName, k, attrs)
}

func (a *Authorizer) pathDecision(nodeName string, k kind, attrs authz.Attributes) (authz.Decision, string, error) {
	if a.graph.HasPath(nodeName, k, attrs.Namespace, attrs.Name) {
		return authz.DecisionAllow, "", nil
	}
	if !a.HasSynced() {
		return authz.DecisionNoOpinion, noRelationship(nodeName), errNotSynced
	}
	return authz.DecisionNoOpinion, noRelationship(nodeName), nil
}

// serviceAccount: a get of the ServiceAccount of one of the node's pods
// (upstream's KubeletServiceAccountTokenForCredentialProviders, on by
// default), or a TokenRequest for it.
func (a *Authorizer) serviceAccount(nodeName string, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Verb == request.VerbGet && attrs.Subresource == "" {
		return a.readNamespacedObject(nodeName, kindServiceAccount, attrs)
	}
	if attrs.Verb != request.VerbCreate || attrs.Name == "" {
		return authz.DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	}
	if attrs.Subresource != "token" {
		return authz.DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return a.pathDecision(nodeName, kindServiceAccount, attrs)
}

// lease: the node's own Lease in kube-node-lease. A create names no
// object; NodeRestriction checks the body's name.
func (a *Authorizer) lease(nodeName string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case request.VerbGet, request.VerbCreate, request.VerbUpdate, request.VerbPatch, request.VerbDelete:
	default:
		return authz.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.Namespace != namespaceNodeLease {
		return authz.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", namespaceNodeLease), nil
	}
	if attrs.Verb != request.VerbCreate && attrs.Name != nodeName {
		return authz.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authz.DecisionAllow, "", nil
}

// csiNode: the node's own CSINode.
func (a *Authorizer) csiNode(nodeName string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Verb {
	case request.VerbGet, request.VerbCreate, request.VerbUpdate, request.VerbPatch, request.VerbDelete:
	default:
		return authz.DecisionNoOpinion, "can only get, create, update, patch, or delete a CSINode", nil
	}
	if attrs.Subresource != "" {
		return authz.DecisionNoOpinion, "cannot authorize CSINode subresources", nil
	}
	if attrs.Verb != request.VerbCreate && attrs.Name != nodeName {
		return authz.DecisionNoOpinion, "can only access CSINode with the same name as the requesting node", nil
	}
	return authz.DecisionAllow, "", nil
}

// resourceSlice: the node's own ResourceSlices; lists and watches only
// with the node's spec.nodeName selector.
func (a *Authorizer) resourceSlice(nodeName string, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.Subresource != "" {
		return authz.DecisionNoOpinion, "cannot authorize ResourceSlice subresources", nil
	}
	switch attrs.Verb {
	case request.VerbCreate:
		// NodeRestriction checks the body's spec.nodeName.
		return authz.DecisionAllow, "", nil
	case request.VerbGet, request.VerbUpdate, request.VerbPatch, request.VerbDelete:
		return a.related(nodeName, kindResourceSlice, attrs)
	case request.VerbWatch, request.VerbList, request.VerbDeleteCollection:
		if selectsNode(attrs.FieldSelector, "spec.nodeName", nodeName) {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "can only list/watch/deletecollection resourceslices with nodeName field selector", nil
	}
	return authz.DecisionNoOpinion, "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection", nil
}

// node: reads of the node's own Node; creates and updates of any (the
// NodeRestriction admission plugin limits them to its own).
func (a *Authorizer) node(nodeName string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case request.VerbCreate, request.VerbUpdate, request.VerbPatch:
			return authz.DecisionAllow, "", nil
		case request.VerbGet, request.VerbList, request.VerbWatch:
			// By name rather than by graph, so a kubelet may look for its
			// Node before creating it.
			switch attrs.Name {
			case nodeName:
				return authz.DecisionAllow, "", nil
			case "":
				return authz.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", nodeName), nil
			default:
				return authz.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", nodeName, attrs.Name), nil
			}
		}
	case "status":
		switch attrs.Verb {
		case request.VerbUpdate, request.VerbPatch:
			return authz.DecisionAllow, "", nil
		}
	}
	return authz.DecisionNoOpinion, "", nil
}

// pod: reads of the node's pods, lists and watches with its spec.nodeName
// selector, mirror pod creates and deletes, status updates and evictions
// (the last three narrowed by NodeRestriction).
func (a *Authorizer) pod(nodeName string, attrs authz.Attributes) (authz.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case request.VerbGet:
			return a.get(nodeName, kindPod, attrs)
		case request.VerbList, request.VerbWatch:
			if selectsNode(attrs.FieldSelector, "spec.nodeName", nodeName) {
				return authz.DecisionAllow, "", nil
			}
			if attrs.Name != "" {
				return a.related(nodeName, kindPod, attrs)
			}
			return authz.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case request.VerbCreate, request.VerbDelete:
			return authz.DecisionAllow, "", nil
		}
	case "status":
		switch attrs.Verb {
		case request.VerbUpdate, request.VerbPatch:
			return authz.DecisionAllow, "", nil
		}
	case "eviction":
		if attrs.Verb == request.VerbCreate {
			return authz.DecisionAllow, "", nil
		}
	}
	return authz.DecisionNoOpinion, "", nil
}

// selectsNode reports whether selector requires field == nodeName.
func selectsNode(selector, field, nodeName string) bool {
	if selector == "" {
		return false
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return false
	}
	for _, r := range sel.Requirements() {
		if r.Field == field && r.Operator == selection.Equals && r.Value == nodeName {
			return true
		}
	}
	return false
}
