package noderestriction

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// objects is an in-memory object source standing in for the watch cache.
type objects map[string]runtime.Object

func key(gvr schema.GroupVersionResource, ns, name string) string {
	return gvr.Resource + "/" + ns + "/" + name
}

func (o objects) GetObject(_ context.Context, gvr schema.GroupVersionResource, ns, name, _ string) (runtime.Object, error) {
	if obj, ok := o[key(gvr, ns, name)]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func nodeUser(name string) *request.User {
	return &request.User{Name: "system:node:" + name, Groups: []string{"system:nodes", request.GroupAuthenticated}}
}

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{NodeName: node}}
}

func mirrorPod(node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := testPod("mirror", node)
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID("node-uid-" + node), Controller: ptr.To(true)}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func testNode(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-uid-" + name), Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func withLabel(k, v string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

var (
	gvrPods     = corev1.SchemeGroupVersion.WithResource("pods")
	gvrNodes    = corev1.SchemeGroupVersion.WithResource("nodes")
	gvrLeases   = coordinationv1.SchemeGroupVersion.WithResource("leases")
	gvrSAs      = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	gvrCSINodes = storagev1.SchemeGroupVersion.WithResource("csinodes")
	gvrPVCs     = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	gvrSlices   = resourcev1.SchemeGroupVersion.WithResource("resourceslices")
)

func TestAdmit(t *testing.T) {
	store := objects{
		key(gvrPods, "ns", "pa"):      testPod("pa", "a"),
		key(gvrPods, "ns", "pb"):      testPod("pb", "b"),
		key(gvrNodes, "", "a"):        testNode("a"),
		key(gvrSlices, "", "slice-a"): &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice-a"}, Spec: resourcev1.ResourceSliceSpec{NodeName: ptr.To("a")}},
		key(gvrSlices, "", "slice-b"): &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice-b"}, Spec: resourcev1.ResourceSliceSpec{NodeName: ptr.To("b")}},
	}
	tokenPod := testPod("pa", "a")
	tokenPod.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault"}}}}}}}
	store[key(gvrPods, "ns", "pa")] = tokenPod
	p, err := New(Config{Objects: store})
	if err != nil {
		t.Fatal(err)
	}
	a := nodeUser("a")
	tokenRequest := func(pod string, uid string, audiences ...string) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, UID: types.UID(uid)}}}
	}
	oldNode := testNode("a")
	cases := []struct {
		name  string
		attrs admission.Attributes
		// want is "" to admit, else a substring of the 403.
		want string
	}{
		{"non-node", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: testPod("x", "b"), User: &request.User{Name: "alice"}}, ""},
		{"nameless node", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: testPod("x", ""), User: &request.User{Name: "system:node:", Groups: []string{"system:nodes"}}}, `could not determine node from user "system:node:"`},
		{"mirror pod", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a"), User: a}, ""},
		{"regular pod", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: testPod("x", "a"), User: a},
			`pods "x" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "a" can only create mirror pods`},
		{"mirror pod for another node", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("b"), User: a},
			`node "a" can only create pods with spec.nodeName set to itself`},
		{"mirror pod without owner", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a", func(p *corev1.Pod) { p.OwnerReferences = nil }), User: a},
			`node "a" can only create pods with an owner reference set to itself`},
		{"mirror pod with wrong node uid", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a", func(p *corev1.Pod) { p.OwnerReferences[0].UID = "other" }), User: a},
			`node a UID mismatch: expected other got node-uid-a`},
		{"mirror pod with a secret", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}), User: a}, `node "a" can not create pods that reference secrets`},
		{"mirror pod with a service account", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), User: a},
			`node "a" can not create pods that reference serviceaccounts`},
		{"mirror pod with a configmap env", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a", func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}}
		}), User: a}, `node "a" can not create pods that reference configmaps`},
		{"mirror pod with a pvc", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: mirrorPod("a", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		}), User: a}, `node "a" can not create pods that reference persistentvolumeclaims`},
		{"own pod delete", admission.Attributes{Operation: admission.Delete, Resource: gvrPods, Namespace: "ns", Name: "pa", User: a}, ""},
		{"other's pod delete", admission.Attributes{Operation: admission.Delete, Resource: gvrPods, Namespace: "ns", Name: "pb", User: a},
			`pods "Unknown" is forbidden: node "a" can only delete pods with spec.nodeName set to itself`},
		{"pod update", admission.Attributes{Operation: admission.Update, Resource: gvrPods, Namespace: "ns", Name: "pa", Object: testPod("pa", "a"), OldObject: testPod("pa", "a"), User: a},
			`unexpected operation "UPDATE", node "a" can only create and delete mirror pods`},
		{"own pod status", admission.Attributes{Operation: admission.Update, Resource: gvrPods, Subresource: "status", Namespace: "ns", Name: "pa", Object: testPod("pa", "a"), OldObject: testPod("pa", "a"), User: a}, ""},
		{"other's pod status", admission.Attributes{Operation: admission.Update, Resource: gvrPods, Subresource: "status", Namespace: "ns", Name: "pb", Object: testPod("pb", "b"), OldObject: testPod("pb", "b"), User: a},
			`pods "pb" is forbidden: node "a" can only update pod status for pods with spec.nodeName set to itself`},
		{"labels through pod status", admission.Attributes{Operation: admission.Update, Resource: gvrPods, Subresource: "status", Namespace: "ns", Name: "pa", Object: func() *corev1.Pod {
			p := testPod("pa", "a")
			p.Labels = map[string]string{"x": "y"}
			return p
		}(), OldObject: testPod("pa", "a"), User: a}, `node "a" cannot update labels through pod status`},
		{"pod exec", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Subresource: "exec", Namespace: "ns", Name: "pa", User: a},
			`unexpected pod subresource "exec", only 'status' and 'eviction' are allowed`},
		{"own pod eviction", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Subresource: "eviction", Namespace: "ns", Name: "pa", Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pa"}}, User: a}, ""},
		{"other's pod eviction", admission.Attributes{Operation: admission.Create, Resource: gvrPods, Subresource: "eviction", Namespace: "ns", Name: "pb", Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pb"}}, User: a},
			`pods "pb" is forbidden: node a can only evict pods with spec.nodeName set to itself`},
		{"own node update", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "a", Object: testNode("a", withLabel("node.kubernetes.io/role", "x"), withLabel("example.com/x", "y")), OldObject: oldNode, User: a}, ""},
		{"own node status", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Subresource: "status", Name: "a", Object: testNode("a"), OldObject: oldNode, User: a}, ""},
		{"other node update", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "b", Object: testNode("b"), OldObject: testNode("b"), User: a},
			`nodes "b" is forbidden: node "a" is not allowed to modify node "b"`},
		{"other node delete", admission.Attributes{Operation: admission.Delete, Resource: gvrNodes, Name: "b", User: a}, `node "a" is not allowed to modify node "b"`},
		{"restricted label", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "a", Object: testNode("a", withLabel("node-restriction.kubernetes.io/pool", "gold")), OldObject: oldNode, User: a},
			`is not allowed to modify labels: node-restriction.kubernetes.io/pool`},
		{"role label", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "a", Object: testNode("a", withLabel("node-role.kubernetes.io/control-plane", ""), withLabel("x.k8s.io/y", "z")), OldObject: oldNode, User: a},
			`is not allowed to modify labels: node-role.kubernetes.io/control-plane, x.k8s.io/y`},
		{"removing a restricted label", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "a", Object: testNode("a"), OldObject: testNode("a", withLabel("node-restriction.kubernetes.io/pool", "gold")), User: a},
			`is not allowed to modify labels: node-restriction.kubernetes.io/pool`},
		{"create with restricted label", admission.Attributes{Operation: admission.Create, Resource: gvrNodes, Name: "a", Object: testNode("a", withLabel("example.node-restriction.kubernetes.io/x", "y"), withLabel("topology.kubernetes.io/zone", "z")), User: a},
			`node "a" is not allowed to set the following labels: example.node-restriction.kubernetes.io/x`},
		{"create with kubelet labels", admission.Attributes{Operation: admission.Create, Resource: gvrNodes, Name: "a", Object: testNode("a", withLabel("kubernetes.io/os", "linux"), withLabel("beta.kubernetes.io/arch", "amd64"), withLabel("kubelet.kubernetes.io/x", "y")), User: a}, ""},
		{"taints", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "a", Object: testNode("a", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }), OldObject: oldNode, User: a},
			`node "a" is not allowed to modify taints`},
		{"configSource", admission.Attributes{Operation: admission.Update, Resource: gvrNodes, Name: "a", Object: testNode("a", func(n *corev1.Node) {
			n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Name: "c"}}
		}), OldObject: oldNode, User: a}, `node "a" is not allowed to update configSource to a new non-nil configSource`},
		{"own lease", admission.Attributes{Operation: admission.Create, Resource: gvrLeases, Namespace: "kube-node-lease", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, User: a}, ""},
		{"other's lease create", admission.Attributes{Operation: admission.Create, Resource: gvrLeases, Namespace: "kube-node-lease", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, User: a},
			`leases.coordination.k8s.io "b" is forbidden: can only access node lease with the same name as the requesting node`},
		{"other's lease update", admission.Attributes{Operation: admission.Update, Resource: gvrLeases, Namespace: "kube-node-lease", Name: "b", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, User: a},
			`can only access node lease with the same name as the requesting node`},
		{"lease elsewhere", admission.Attributes{Operation: admission.Update, Resource: gvrLeases, Namespace: "default", Name: "a", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, User: a},
			`can only access leases in the "kube-node-lease" system namespace`},
		{"own csinode", admission.Attributes{Operation: admission.Create, Resource: gvrCSINodes, Object: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, User: a}, ""},
		{"other's csinode", admission.Attributes{Operation: admission.Update, Resource: gvrCSINodes, Name: "b", Object: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, User: a},
			`can only access CSINode with the same name as the requesting node`},
		{"own resource slice delete", admission.Attributes{Operation: admission.Delete, Resource: gvrSlices, Name: "slice-a", User: a}, ""},
		{"other's resource slice delete", admission.Attributes{Operation: admission.Delete, Resource: gvrSlices, Name: "slice-b", User: a},
			`can only delete ResourceSlice with the same NodeName as the requesting node`},
		{"other's resource slice create", admission.Attributes{Operation: admission.Create, Resource: gvrSlices, Object: &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{NodeName: ptr.To("b")}}, User: a},
			`resourceslices.resource.k8s.io "s" is forbidden: can only create ResourceSlice with the same NodeName as the requesting node`},
		{"pvc spec", admission.Attributes{Operation: admission.Update, Resource: gvrPVCs, Namespace: "ns", Name: "c", User: a}, `may only update PVC status`},
		{"token for own pod", admission.Attributes{Operation: admission.Create, Resource: gvrSAs, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("pa", "uid-pa", "vault"), User: a}, ""},
		{"token for other's pod", admission.Attributes{Operation: admission.Create, Resource: gvrSAs, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("pb", "uid-pb"), User: a},
			`node requested token bound to a pod scheduled on a different node`},
		{"token not bound", admission.Attributes{Operation: admission.Create, Resource: gvrSAs, Subresource: "token", Namespace: "ns", Name: "default", Object: &authenticationv1.TokenRequest{}, User: a},
			`node requested token not bound to a pod`},
		{"token for a recreated pod", admission.Attributes{Operation: admission.Create, Resource: gvrSAs, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("pa", "old-uid", "vault"), User: a},
			`the UID in the bound object reference (old-uid) does not match the UID in record`},
		{"token for an audience the pod does not use", admission.Attributes{Operation: admission.Create, Resource: gvrSAs, Subresource: "token", Namespace: "ns", Name: "default", Object: tokenRequest("pa", "uid-pa", "other"), User: a},
			`audience "other" not found in pod spec volume, system:node:a is not authorized to request tokens for this audience`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !p.Handles(c.attrs.Operation) {
				t.Fatalf("does not handle %s", c.attrs.Operation)
			}
			err := p.Admit(context.Background(), &c.attrs)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want 403 saying %q", err, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q, want it to say %q", err.Error(), c.want)
			}
		})
	}
}

func TestTokenAudienceByAuthorizer(t *testing.T) {
	store := objects{key(gvrPods, "ns", "pa"): testPod("pa", "a")}
	var asked authz.Attributes
	p, err := New(Config{Objects: store, Authorizer: authz.AuthorizerFunc(func(_ context.Context, at authz.Attributes) (authz.Decision, string, error) {
		asked = at
		if at.Resource == "granted" {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	req := func(aud string) *admission.Attributes {
		return &admission.Attributes{Operation: admission.Create, Resource: gvrSAs, Subresource: "token", Namespace: "ns", Name: "sa", User: nodeUser("a"),
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{aud}, BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "pa", UID: "uid-pa"}}}}
	}
	if err := p.Admit(context.Background(), req("granted")); err != nil {
		t.Fatalf("granted audience refused: %v", err)
	}
	if asked.Verb != "request-serviceaccounts-token-audience" || asked.Name != "sa" || asked.Namespace != "ns" {
		t.Fatalf("authorizer asked %+v", asked)
	}
	if err := p.Admit(context.Background(), req("other")); !apierrors.IsForbidden(err) {
		t.Fatalf("ungranted audience: %v", err)
	}
}
