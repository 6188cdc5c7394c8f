package noderestriction

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/node"
)

// Objects reads the API's objects (apiserver.Server satisfies it): rv "0"
// is whatever the watch cache has, "" a consistent read. A missing object
// is the resource's 404.
type Objects interface {
	GetObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, rv string) (runtime.Object, error)
}

// Config configures New.
type Config struct {
	// Objects is where pods, nodes, PVCs, PVs and CSIDrivers are read.
	// Required.
	Objects Objects
	// Authorizer, if set, is asked (verb
	// "request-serviceaccounts-token-audience", as upstream) whether a
	// node may request a token for an audience none of the pod's volumes
	// names. Nil refuses such requests.
	Authorizer authz.Authorizer
}

var (
	podsGVR           = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR          = corev1.SchemeGroupVersion.WithResource("nodes")
	pvcsGVR           = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	pvsGVR            = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	csiDriversGVR     = storagev1.SchemeGroupVersion.WithResource("csidrivers")
	resourceSlicesGVR = resourcev1.SchemeGroupVersion.WithResource("resourceslices")

	podResource           = schema.GroupResource{Resource: "pods"}
	nodeResource          = schema.GroupResource{Resource: "nodes"}
	pvcResource           = schema.GroupResource{Resource: "persistentvolumeclaims"}
	svcacctResource       = schema.GroupResource{Resource: "serviceaccounts"}
	leaseResource         = coordinationv1.Resource("leases")
	csiNodeResource       = storagev1.Resource("csinodes")
	resourceSliceResource = resourcev1.Resource("resourceslices")
	csrResource           = certificatesv1.Resource("certificatesigningrequests")
	pcrResource           = schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}
)

// Plugin is NodeRestriction.
type Plugin struct {
	admission.Handler
	cfg Config
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin. It handles creates, updates and deletes, as
// upstream's, and runs in the mutating phase (where upstream's runs),
// though it only refuses.
func New(cfg Config) (*Plugin, error) {
	if cfg.Objects == nil {
		return nil, errors.New("noderestriction: Config.Objects is required")
	}
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), cfg: cfg}, nil
}

// Admit refuses a node's writes to what is not its own.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	nodeName, isNode := node.Identity(a.User)
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return forbidden(a, fmt.Errorf("could not determine node from user %q", a.User.Name))
	}
	switch a.GroupResource() {
	case podResource:
		switch a.Subresource {
		case "":
			return p.admitPod(ctx, nodeName, a)
		case "status":
			return p.admitPodStatus(nodeName, a)
		case "eviction":
			return p.admitPodEviction(ctx, nodeName, a)
		default:
			return forbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource))
		}
	case nodeResource:
		return p.admitNode(nodeName, a)
	case pvcResource:
		if a.Subresource == "status" {
			return p.admitPVCStatus(nodeName, a)
		}
		return forbidden(a, errors.New("may only update PVC status"))
	case svcacctResource:
		return p.admitServiceAccount(ctx, nodeName, a)
	case pcrResource:
		// PodCertificateRequest is alpha and off in upstream v1.34.
		return forbidden(a, errors.New("PodCertificateRequest feature gate is disabled"))
	case leaseResource:
		return admitLease(nodeName, a)
	case csiNodeResource:
		return admitCSINode(nodeName, a)
	case resourceSliceResource:
		return p.admitResourceSlice(ctx, nodeName, a)
	case csrResource:
		return admitCSR(nodeName, a)
	}
	return nil
}

// forbidden is upstream's admission.NewForbidden: the 403 names the
// object by the name in the request body ("Unknown" without one).
func forbidden(a *admission.Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := "Unknown"
	if a.Object != nil {
		if m, merr := meta.Accessor(a.Object); merr == nil {
			if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.GroupResource(), name, err)
}

// get reads an object from the watch cache, and from the store when the
// cache has not seen it yet (created a moment ago). Upstream reads an
// informer's lister, which can lag the same way without the second try.
func (p *Plugin) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	obj, err := p.cfg.Objects.GetObject(ctx, gvr, namespace, name, "0")
	if apierrors.IsNotFound(err) {
		obj, err = p.cfg.Objects.GetObject(ctx, gvr, namespace, name, "")
	}
	return obj, err
}

func (p *Plugin) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := p.get(ctx, podsGVR, namespace, name)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("unexpected type %T", obj)
	}
	return pod, nil
}

// lookupError is upstream's handling of a lister error: a 404 as it is,
// anything else as a 403.
func lookupError(a *admission.Attributes, err error) error {
	if apierrors.IsNotFound(err) {
		return err
	}
	return forbidden(a, err)
}

func (p *Plugin) admitPod(ctx context.Context, nodeName string, a *admission.Attributes) error {
	switch a.Operation {
	case admission.Create:
		return p.admitPodCreate(ctx, nodeName, a)
	case admission.Delete:
		existing, err := p.getPod(ctx, a.Namespace, a.Name)
		if err != nil {
			return lookupError(a, err)
		}
		if existing.Spec.NodeName != nodeName {
			return forbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	}
	return forbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, nodeName))
}

func (p *Plugin) admitPodCreate(ctx context.Context, nodeName string, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName))
	}
	if pod.Spec.NodeName != nodeName {
		return forbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return forbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	case 1:
	default:
		return forbidden(a, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return forbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbidden(a, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbidden(a, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName))
	}
	obj, err := p.get(ctx, nodesGVR, "", nodeName)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return forbidden(a, fmt.Errorf("error looking up node %s to verify uid: %v", nodeName, err))
	}
	if n, ok := obj.(*corev1.Node); !ok || owner.UID != n.UID {
		var uid any
		if ok {
			uid = n.UID
		}
		return forbidden(a, fmt.Errorf("node %s UID mismatch: expected %s got %s", nodeName, owner.UID, uid))
	}
	refs, resource, err := hasAPIObjectReference(pod)
	if err != nil {
		return forbidden(a, fmt.Errorf("error checking mirror pod for API references: %w", err))
	}
	if refs {
		return forbidden(a, fmt.Errorf("node %q can not create pods that reference %s", nodeName, resource))
	}
	return nil
}

func (p *Plugin) admitPodStatus(nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Update {
		return forbidden(a, fmt.Errorf("unexpected operation %q", a.Operation))
	}
	oldPod, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
	}
	if oldPod.Spec.NodeName != nodeName {
		return forbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	newPod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	if !labels.Equals(oldPod.Labels, newPod.Labels) {
		return forbidden(a, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	if !resourceClaimStatusesEqual(oldPod.Status.ResourceClaimStatuses, newPod.Status.ResourceClaimStatuses) {
		return forbidden(a, fmt.Errorf("node %q cannot update resource claim statues", nodeName))
	}
	if !extendedResourceClaimStatusEqual(oldPod.Status.ExtendedResourceClaimStatus, newPod.Status.ExtendedResourceClaimStatus) {
		return forbidden(a, fmt.Errorf("node %q cannot update extended resource claim status", nodeName))
	}
	return nil
}

func resourceClaimStatusesEqual(x, y []corev1.PodResourceClaimStatus) bool {
	return slices.EqualFunc(x, y, func(a, b corev1.PodResourceClaimStatus) bool {
		if a.Name != b.Name || (a.ResourceClaimName == nil) != (b.ResourceClaimName == nil) {
			return false
		}
		return a.ResourceClaimName == nil || *a.ResourceClaimName == *b.ResourceClaimName
	})
}

func extendedResourceClaimStatusEqual(x, y *corev1.PodExtendedResourceClaimStatus) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.ResourceClaimName == y.ResourceClaimName && slices.Equal(x.RequestMappings, y.RequestMappings)
}

func (p *Plugin) admitPodEviction(ctx context.Context, nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return forbidden(a, fmt.Errorf("unexpected operation %s", a.Operation))
	}
	eviction, ok := a.Object.(*policyv1.Eviction)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	podName := a.Name
	if podName == "" {
		if eviction.Name == "" {
			return forbidden(a, errors.New("could not determine pod from request data"))
		}
		podName = eviction.Name
	}
	existing, err := p.getPod(ctx, a.Namespace, podName)
	if err != nil {
		return lookupError(a, err)
	}
	if existing.Spec.NodeName != nodeName {
		return forbidden(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

func (p *Plugin) admitPVCStatus(nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Update {
		return forbidden(a, fmt.Errorf("unexpected operation %q", a.Operation))
	}
	oldPVC, ok := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
	}
	newPVC, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	// A node may only change capacity, conditions and (with
	// RecoverVolumeExpansionFailure, GA in v1.34) the allocated resources.
	oldPVC, newPVC = oldPVC.DeepCopy(), newPVC.DeepCopy()
	for _, c := range []*corev1.PersistentVolumeClaim{oldPVC, newPVC} {
		c.ResourceVersion = ""
		c.ManagedFields = nil
		c.Status.Capacity = nil
		c.Status.Conditions = nil
		c.Status.AllocatedResourceStatuses = nil
		c.Status.AllocatedResources = nil
	}
	if !equality.Semantic.DeepEqual(oldPVC, newPVC) {
		return forbidden(a, fmt.Errorf("node %q is not allowed to update fields other than status.quantity and status.conditions", nodeName))
	}
	return nil
}

func (p *Plugin) admitNode(nodeName string, a *admission.Attributes) error {
	if a.Name != nodeName {
		return forbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, a.Name))
	}
	switch a.Operation {
	case admission.Create:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if n.Spec.ConfigSource != nil {
			return forbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, nil)); len(bad) > 0 {
			return forbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case admission.Update:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if n.Spec.ConfigSource != nil && !equality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		if !equality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if !equality.Semantic.DeepEqual(n.OwnerReferences, old.OwnerReferences) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to modify ownerReferences", nodeName))
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, old.Labels)); len(bad) > 0 {
			return forbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}

func admitLease(nodeName string, a *admission.Attributes) error {
	if a.Namespace != corev1.NamespaceNodeLease {
		return forbidden(a, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	name := a.Name
	if a.Operation == admission.Create {
		lease, ok := a.Object.(*coordinationv1.Lease)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		name = lease.Name
	}
	if name != nodeName {
		return forbidden(a, errors.New("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

func admitCSINode(nodeName string, a *admission.Attributes) error {
	name := a.Name
	if a.Operation == admission.Create {
		m, err := meta.Accessor(a.Object)
		if err != nil {
			return forbidden(a, errors.New("unable to access the object name"))
		}
		name = m.GetName()
	}
	if name != nodeName {
		return forbidden(a, errors.New("can only access CSINode with the same name as the requesting node"))
	}
	return nil
}

func (p *Plugin) admitResourceSlice(ctx context.Context, nodeName string, a *admission.Attributes) error {
	var obj runtime.Object
	var msg string
	switch a.Operation {
	case admission.Create:
		obj, msg = a.Object, "can only create ResourceSlice with the same NodeName as the requesting node"
	case admission.Delete:
		obj, msg = a.OldObject, "can only delete ResourceSlice with the same NodeName as the requesting node"
		if obj == nil {
			// The mutating phase of a DELETE has no object yet.
			var err error
			if obj, err = p.get(ctx, resourceSlicesGVR, "", a.Name); err != nil {
				return lookupError(a, err)
			}
		}
	default:
		return nil
	}
	slice, ok := obj.(*resourcev1.ResourceSlice)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", obj))
	}
	if slice.Spec.NodeName == nil || *slice.Spec.NodeName != nodeName {
		return forbidden(a, errors.New(msg))
	}
	return nil
}

// admitCSR: a node may ask the kubelet signers only for its own name
// (AllowInsecureKubeletCertificateSigningRequests is off in v1.34).
func admitCSR(nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName && csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return nil
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return forbidden(a, errors.New("unable to parse csr: PEM block type must be CERTIFICATE REQUEST"))
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return forbidden(a, fmt.Errorf("unable to parse csr: %w", err))
	}
	if req.Subject.CommonName != "system:node:"+nodeName {
		return forbidden(a, fmt.Errorf("can only create a node CSR with CN=system:node:%s", nodeName))
	}
	return nil
}

// admitServiceAccount: a node's TokenRequest must be bound to a pod on
// it, for an audience the pod uses (or one the authorizer grants).
func (p *Plugin) admitServiceAccount(ctx context.Context, nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Create || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbidden(a, errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return forbidden(a, errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.getPod(ctx, a.Namespace, ref.Name)
	if err != nil {
		return lookupError(a, err)
	}
	if ref.UID != pod.UID {
		return forbidden(a, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return forbidden(a, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	if err := p.checkAudience(ctx, tr, pod, a); err != nil {
		return forbidden(a, err)
	}
	return nil
}
