package node

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// fixture is an authorizer over a graph fed through the same store the
// reflectors use.
type fixture struct {
	a     *Authorizer
	pods  *graphStore
	pvs   *graphStore
	atts  *graphStore
	graph *Graph
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	g := NewGraph()
	log := slog.New(slog.DiscardHandler)
	f := &fixture{
		graph: g,
		pods:  &graphStore{g: g, resource: "pods", log: log},
		pvs:   &graphStore{g: g, resource: "persistentvolumes", log: log},
		atts:  &graphStore{g: g, resource: "volumeattachments", log: log},
	}
	f.a = &Authorizer{graph: g, pop: &populator{stores: []*graphStore{f.pods, f.pvs, f.atts}}, log: log, rules: nodeRules()}
	for _, s := range f.a.pop.stores {
		if err := s.Replace(nil, "1"); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) addPod(t testing.TB, p *corev1.Pod) {
	t.Helper()
	if err := f.pods.Add(p); err != nil {
		t.Fatal(err)
	}
}

func pod(ns, name, node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-" + "name"},
		Spec:       corev1.PodSpec{NodeName: node, ServiceAccountName: "default"},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func withSecretVolume(secret string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "s-" + secret, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	}
}

func withConfigMapEnv(cm string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}})
	}
}

func withPVC(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v-" + claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func nodeUser(name string) *request.User {
	return &request.User{Name: "system:node:" + name, Groups: []string{NodesGroup, request.GroupAuthenticated}}
}

func res(user *request.User, verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{User: user, Verb: verb, IsResourceRequest: true, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

type decisionCase struct {
	name   string
	attrs  authz.Attributes
	want   authz.Decision
	reason string // checked when not empty
}

func checkDecisions(t *testing.T, a *Authorizer, cases []decisionCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), c.attrs)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if d != c.want {
				t.Fatalf("decision = %v (%q), want %v", d, reason, c.want)
			}
			if c.reason != "" && reason != c.reason {
				t.Fatalf("reason = %q, want %q", reason, c.reason)
			}
		})
	}
}

func TestAuthorizeGraphObjects(t *testing.T) {
	f := newFixture(t)
	f.addPod(t, pod("ns", "a-pod", "a", withSecretVolume("a-secret"), withConfigMapEnv("a-cm"), withPVC("a-claim"), withSecretVolume("shared")))
	f.addPod(t, pod("ns", "b-pod", "b", withSecretVolume("b-secret"), withConfigMapEnv("b-cm"), withSecretVolume("shared")))
	f.addPod(t, pod("ns", "unbound", "", withSecretVolume("unbound-secret")))
	f.addPod(t, pod("ns", "mirror", "a", withSecretVolume("mirror-secret"), func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	}))
	a, b := nodeUser("a"), nodeUser("b")
	noRel := "no relationship found between node 'a' and this object"
	checkDecisions(t, f.a, []decisionCase{
		{"secret of own pod", res(a, "get", "", "secrets", "", "ns", "a-secret"), authz.DecisionAllow, ""},
		{"secret of another node's pod", res(a, "get", "", "secrets", "", "ns", "b-secret"), authz.DecisionNoOpinion, noRel},
		{"secret of both", res(b, "get", "", "secrets", "", "ns", "shared"), authz.DecisionAllow, ""},
		{"secret in another namespace", res(a, "get", "", "secrets", "", "other", "a-secret"), authz.DecisionNoOpinion, noRel},
		{"secret of unbound pod", res(a, "get", "", "secrets", "", "ns", "unbound-secret"), authz.DecisionNoOpinion, noRel},
		{"secret named by a mirror pod", res(a, "get", "", "secrets", "", "ns", "mirror-secret"), authz.DecisionNoOpinion, noRel},
		{"watch of own secret by name", res(a, "watch", "", "secrets", "", "ns", "a-secret"), authz.DecisionAllow, ""},
		{"list of all secrets", res(a, "list", "", "secrets", "", "ns", ""), authz.DecisionNoOpinion, "No Object name found"},
		{"cluster-wide secret list", res(a, "list", "", "secrets", "", "", ""), authz.DecisionNoOpinion, "can only read namespaced object of this type"},
		{"update of own secret", res(a, "update", "", "secrets", "", "ns", "a-secret"), authz.DecisionNoOpinion, "can only read resources of this type"},
		{"configmap of own pod", res(a, "get", "", "configmaps", "", "ns", "a-cm"), authz.DecisionAllow, ""},
		{"configmap of another's", res(a, "get", "", "configmaps", "", "ns", "b-cm"), authz.DecisionNoOpinion, noRel},
		{"pvc of own pod", res(a, "get", "", "persistentvolumeclaims", "", "ns", "a-claim"), authz.DecisionAllow, ""},
		{"pvc list", res(a, "list", "", "persistentvolumeclaims", "", "ns", ""), authz.DecisionNoOpinion, "can only get individual resources of this type"},
		{"pvc status update", res(a, "update", "", "persistentvolumeclaims", "status", "ns", "a-claim"), authz.DecisionAllow, ""},
		{"pvc status get", res(a, "get", "", "persistentvolumeclaims", "status", "ns", "a-claim"), authz.DecisionNoOpinion, "can only get/update/patch this type"},
		{"service account token", res(a, "create", "", "serviceaccounts", "token", "ns", "default"), authz.DecisionAllow, ""},
		{"service account token elsewhere", res(a, "create", "", "serviceaccounts", "token", "other", "default"), authz.DecisionNoOpinion, noRel},
		{"service account get", res(a, "get", "", "serviceaccounts", "", "ns", "default"), authz.DecisionAllow, ""},
		{"service account update", res(a, "update", "", "serviceaccounts", "", "ns", "default"), authz.DecisionNoOpinion, "can only create tokens for individual service accounts"},
		{"own pod get", res(a, "get", "", "pods", "", "ns", "a-pod"), authz.DecisionAllow, ""},
		{"other pod get", res(a, "get", "", "pods", "", "ns", "b-pod"), authz.DecisionNoOpinion, noRel},
		{"unknown node", res(nodeUser("c"), "get", "", "secrets", "", "ns", "a-secret"), authz.DecisionNoOpinion, "no relationship found between node 'c' and this object"},
	})
}

func TestAuthorizeLosesAccessWhenPodGoesAway(t *testing.T) {
	f := newFixture(t)
	a := nodeUser("a")
	get := res(a, "get", "", "secrets", "", "ns", "s")
	allowed := func() bool {
		d, _, _ := f.a.Authorize(context.Background(), get)
		return d == authz.DecisionAllow
	}
	p := pod("ns", "p", "a", withSecretVolume("s"))
	f.addPod(t, p)
	if !allowed() {
		t.Fatal("not allowed with its pod bound")
	}
	if err := f.pods.Delete(p); err != nil {
		t.Fatal(err)
	}
	if allowed() {
		t.Fatal("still allowed after the pod was deleted")
	}
	if s := f.graph.Stats(); s.Nodes != 0 || s.Vertices != [numKinds]int{} {
		t.Fatalf("graph not empty after the only pod left: %+v", s)
	}
	// Moved: the same pod recreated on node b.
	f.addPod(t, p)
	moved := pod("ns", "p", "b", withSecretVolume("s"))
	if err := f.pods.Update(moved); err != nil {
		t.Fatal(err)
	}
	if allowed() {
		t.Fatal("still allowed after the pod moved to b")
	}
	if d, _, _ := f.a.Authorize(context.Background(), res(nodeUser("b"), "get", "", "secrets", "", "ns", "s")); d != authz.DecisionAllow {
		t.Fatal("b not allowed after the pod moved there")
	}
	// The pod stops referencing the secret.
	if err := f.pods.Update(pod("ns", "p", "b")); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := f.a.Authorize(context.Background(), res(nodeUser("b"), "get", "", "secrets", "", "ns", "s")); d == authz.DecisionAllow {
		t.Fatal("b still allowed after the pod stopped referencing the secret")
	}
	// A relist that no longer holds the pod drops it.
	if err := f.pods.Replace(nil, "9"); err != nil {
		t.Fatal(err)
	}
	if s := f.graph.Stats(); s.Vertices[kindPod] != 0 {
		t.Fatalf("relist kept %d pods", s.Vertices[kindPod])
	}
}

func TestAuthorizePVChains(t *testing.T) {
	f := newFixture(t)
	f.addPod(t, pod("ns", "p", "a", withPVC("claim")))
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "claim"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:                     "d",
				NodePublishSecretRef:       &corev1.SecretReference{Namespace: "secrets", Name: "publish"},
				ControllerPublishSecretRef: &corev1.SecretReference{Namespace: "secrets", Name: "controller"},
			}},
		},
	}
	if err := f.pvs.Add(pv); err != nil {
		t.Fatal(err)
	}
	unclaimedPV := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv2"}}
	if err := f.pvs.Add(unclaimedPV); err != nil {
		t.Fatal(err)
	}
	if err := f.atts.Add(&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-a"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "a"}}); err != nil {
		t.Fatal(err)
	}
	a, b := nodeUser("a"), nodeUser("b")
	checkDecisions(t, f.a, []decisionCase{
		{"pv of own pod's claim", res(a, "get", "", "persistentvolumes", "", "", "pv1"), authz.DecisionAllow, ""},
		{"pv for another node", res(b, "get", "", "persistentvolumes", "", "", "pv1"), authz.DecisionNoOpinion, ""},
		{"unclaimed pv", res(a, "get", "", "persistentvolumes", "", "", "pv2"), authz.DecisionNoOpinion, ""},
		{"node-visible pv secret", res(a, "get", "", "secrets", "", "secrets", "publish"), authz.DecisionAllow, ""},
		{"controller-only pv secret", res(a, "get", "", "secrets", "", "secrets", "controller"), authz.DecisionNoOpinion, ""},
		{"pv secret for another node", res(b, "get", "", "secrets", "", "secrets", "publish"), authz.DecisionNoOpinion, ""},
		{"own volume attachment", res(a, "get", "storage.k8s.io", "volumeattachments", "", "", "va-a"), authz.DecisionAllow, ""},
		{"another's volume attachment", res(b, "get", "storage.k8s.io", "volumeattachments", "", "", "va-a"), authz.DecisionNoOpinion, ""},
	})
	// The PV released: the chain is gone.
	pv2 := pv.DeepCopy()
	pv2.Spec.ClaimRef = nil
	if err := f.pvs.Update(pv2); err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, f.a, []decisionCase{
		{"released pv", res(a, "get", "", "persistentvolumes", "", "", "pv1"), authz.DecisionNoOpinion, ""},
		{"released pv's secret", res(a, "get", "", "secrets", "", "secrets", "publish"), authz.DecisionNoOpinion, ""},
		{"claim still", res(a, "get", "", "persistentvolumeclaims", "", "ns", "claim"), authz.DecisionAllow, ""},
	})
}

func TestAuthorizeOwnObjects(t *testing.T) {
	f := newFixture(t)
	f.addPod(t, pod("ns", "p", "a"))
	a := nodeUser("a")
	withSelector := func(at authz.Attributes, sel string) authz.Attributes { at.FieldSelector = sel; return at }
	checkDecisions(t, f.a, []decisionCase{
		{"own node get", res(a, "get", "", "nodes", "", "", "a"), authz.DecisionAllow, ""},
		{"other node get", res(a, "get", "", "nodes", "", "", "b"), authz.DecisionNoOpinion, "node 'a' cannot read 'b', only its own Node object"},
		{"node list", res(a, "list", "", "nodes", "", "", ""), authz.DecisionNoOpinion, "node 'a' cannot read all nodes, only its own Node object"},
		{"node status patch (NodeRestriction narrows)", res(a, "patch", "", "nodes", "status", "", "b"), authz.DecisionAllow, ""},
		{"node delete", res(a, "delete", "", "nodes", "", "", "a"), authz.DecisionNoOpinion, ""},
		{"own lease update", res(a, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "a"), authz.DecisionAllow, ""},
		{"other lease update", res(a, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "b"), authz.DecisionNoOpinion, "can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", res(a, "get", "coordination.k8s.io", "leases", "", "kube-system", "a"), authz.DecisionNoOpinion, `can only access leases in the "kube-node-lease" system namespace`},
		{"lease list", res(a, "list", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), authz.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease"},
		{"lease create", res(a, "create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), authz.DecisionAllow, ""},
		{"own csinode", res(a, "update", "storage.k8s.io", "csinodes", "", "", "a"), authz.DecisionAllow, ""},
		{"other csinode", res(a, "update", "storage.k8s.io", "csinodes", "", "", "b"), authz.DecisionNoOpinion, "can only access CSINode with the same name as the requesting node"},
		{"pods on own node", withSelector(res(a, "watch", "", "pods", "", "", ""), "spec.nodeName=a"), authz.DecisionAllow, ""},
		{"pods on other node", withSelector(res(a, "list", "", "pods", "", "", ""), "spec.nodeName=b"), authz.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"all pods", res(a, "list", "", "pods", "", "", ""), authz.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"mirror pod create", res(a, "create", "", "pods", "", "ns", ""), authz.DecisionAllow, ""},
		{"pod status", res(a, "patch", "", "pods", "status", "ns", "p"), authz.DecisionAllow, ""},
		{"pod eviction", res(a, "create", "", "pods", "eviction", "ns", "p"), authz.DecisionAllow, ""},
		{"pod update", res(a, "update", "", "pods", "", "ns", "p"), authz.DecisionNoOpinion, ""},
		{"pod exec", res(a, "create", "", "pods", "exec", "ns", "p"), authz.DecisionNoOpinion, ""},
		{"events (static rule)", res(a, "create", "", "events", "", "ns", ""), authz.DecisionAllow, ""},
		{"services (static rule)", res(a, "watch", "", "services", "", "", ""), authz.DecisionAllow, ""},
		{"csr (static rule)", res(a, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), authz.DecisionAllow, ""},
		{"deployments", res(a, "list", "apps", "deployments", "", "", ""), authz.DecisionNoOpinion, ""},
		{"resourceslices by own node", withSelector(res(a, "list", "resource.k8s.io", "resourceslices", "", "", ""), "spec.nodeName=a"), authz.DecisionAllow, ""},
		{"resourceslices all", res(a, "list", "resource.k8s.io", "resourceslices", "", "", ""), authz.DecisionNoOpinion, "can only list/watch/deletecollection resourceslices with nodeName field selector"},
		{"non-resource", authz.Attributes{User: a, Verb: "get", Path: "/metrics"}, authz.DecisionNoOpinion, ""},
	})
}

func TestAuthorizeNonNodes(t *testing.T) {
	f := newFixture(t)
	f.addPod(t, pod("ns", "p", "a", withSecretVolume("s")))
	notInGroup := &request.User{Name: "system:node:a", Groups: []string{request.GroupAuthenticated}}
	checkDecisions(t, f.a, []decisionCase{
		{"admin", res(&request.User{Name: "admin", Groups: []string{request.GroupMasters}}, "get", "", "secrets", "", "ns", "s"), authz.DecisionNoOpinion, ""},
		{"node name without group", res(notInGroup, "get", "", "secrets", "", "ns", "s"), authz.DecisionNoOpinion, ""},
		{"nil user", res(nil, "get", "", "secrets", "", "ns", "s"), authz.DecisionNoOpinion, ""},
		{"nameless node", res(&request.User{Name: "system:node:", Groups: []string{NodesGroup}}, "get", "", "secrets", "", "ns", "s"), authz.DecisionNoOpinion, `unknown node for user "system:node:"`},
	})
}

func TestAuthorizeBeforeSyncAsksToRetry(t *testing.T) {
	g := NewGraph()
	s := &graphStore{g: g, resource: "pods", log: slog.New(slog.DiscardHandler)}
	a := &Authorizer{graph: g, pop: &populator{stores: []*graphStore{s}}, rules: nodeRules()}
	at := res(nodeUser("a"), "get", "", "secrets", "", "ns", "s")
	d, _, err := a.Authorize(context.Background(), at)
	if d != authz.DecisionNoOpinion || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("before sync: %v, %v; want NoOpinion and 429", d, err)
	}
	// Its own lease needs no graph.
	if d, _, err := a.Authorize(context.Background(), res(nodeUser("a"), "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "a")); d != authz.DecisionAllow || err != nil {
		t.Fatalf("lease before sync: %v, %v", d, err)
	}
	if err := s.Replace([]interface{}{pod("ns", "p", "b", withSecretVolume("s"))}, "1"); err != nil {
		t.Fatal(err)
	}
	if d, _, err = a.Authorize(context.Background(), at); d != authz.DecisionNoOpinion || err != nil {
		t.Fatalf("after sync: %v, %v; want NoOpinion without error", d, err)
	}
}

func TestRulesFor(t *testing.T) {
	f := newFixture(t)
	if _, _, incomplete, err := f.a.RulesFor(context.Background(), nodeUser("a"), "ns"); !incomplete || err == nil {
		t.Fatalf("node: incomplete=%v err=%v", incomplete, err)
	}
	if r, nr, incomplete, err := f.a.RulesFor(context.Background(), &request.User{Name: "u"}, "ns"); r != nil || nr != nil || incomplete || err != nil {
		t.Fatal("non-node got rules")
	}
}

// TestRelistThroughCompactPods: a relist gathered by client-go's reflector
// in a store with the graph's transformer (as WatchList does) holds compact
// pods, not decoded ones, and builds the same graph; a relist without a
// pod removes its edges.
func TestRelistThroughCompactPods(t *testing.T) {
	f := newFixture(t)
	gathered := toolscache.NewStore(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.WithTransformer(f.pods.Transformer()))
	for _, p := range []*corev1.Pod{
		pod("ns", "a-pod", "a", withSecretVolume("a-secret"), withConfigMapEnv("a-cm")),
		pod("ns", "b-pod", "b", withSecretVolume("b-secret")),
	} {
		if err := gathered.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	items := gathered.List()
	for _, it := range items {
		if _, ok := it.(*compactPod); !ok {
			t.Fatalf("the relist store holds %T, want *compactPod", it)
		}
	}
	if err := f.pods.Replace(items, "5"); err != nil {
		t.Fatal(err)
	}
	a := nodeUser("a")
	noRel := "no relationship found between node 'a' and this object"
	checkDecisions(t, f.a, []decisionCase{
		{"secret of own pod", res(a, "get", "", "secrets", "", "ns", "a-secret"), authz.DecisionAllow, ""},
		{"configmap of own pod", res(a, "get", "", "configmaps", "", "ns", "a-cm"), authz.DecisionAllow, ""},
		{"secret of another node's pod", res(a, "get", "", "secrets", "", "ns", "b-secret"), authz.DecisionNoOpinion, noRel},
	})
	aPod, ok, err := gathered.GetByKey("ns/a-pod")
	if err != nil || !ok {
		t.Fatalf("ns/a-pod not in the relist store: %v", err)
	}
	if err := gathered.Delete(aPod); err != nil {
		t.Fatal(err)
	}
	if err := f.pods.Replace(gathered.List(), "6"); err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, f.a, []decisionCase{
		{"secret of a pod gone in the relist", res(a, "get", "", "secrets", "", "ns", "a-secret"), authz.DecisionNoOpinion, noRel},
	})
}
