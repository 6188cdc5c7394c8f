package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node bootstrap: the grants kubeadm makes when it sets up bootstrap
// tokens (cmd/kubeadm/app/phases/bootstraptoken), which upstream's
// default policy leaves to the installer. Myriad is its own installer, so
// they are part of its default policy, under Myriad's names
// ("myriad:..." where kubeadm says "kubeadm:...").
//
// The bootstrap grants go to every bootstrap token (system:bootstrappers),
// where kubeadm grants them to its default node tokens' group only: on
// Myriad, bootstrap tokens exist to join nodes, and tokens made by
// `kubeadm token create` (group system:bootstrappers:kubeadm:default-node-token)
// work as well as Myriad's own. An administrator who wants kubeadm's
// narrower grant sets rbac.authorization.kubernetes.io/autoupdate: "false"
// on the two bindings and edits their subjects.
const (
	bootstrappersGroup = "system:bootstrappers"
	nodesGroup         = "system:nodes"
)

// NodeBootstrapClusterRoleBindings let bootstrap tokens create CSRs
// (system:node-bootstrapper) and have node client certificates approved
// (nodeclient), and nodes have their renewals approved (selfnodeclient).
func NodeBootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	tokens := []rbacv1.Subject{groupSubject(bootstrappersGroup)}
	bind := func(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		b := clusterBinding(role, subjects...)
		b.Name = name
		defaultMetadata(&b.ObjectMeta)
		return b
	}
	return []rbacv1.ClusterRoleBinding{
		bind("myriad:kubelet-bootstrap", "system:node-bootstrapper", tokens...),
		bind("myriad:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", tokens...),
		bind("myriad:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", groupSubject(nodesGroup)),
		bind(servingApproverRole, servingApproverRole, saSubject(metav1.NamespaceSystem, "kubelet-serving-approver")),
	}
}

// servingApproverRole is the role of Myriad's kubelet-serving-approver
// controller (package servingapprover), which upstream does not have; named
// as the controllers' roles are (system:controller:<account>).
const servingApproverRole = ControllerRolePrefix + "kubelet-serving-approver"

// NodeBootstrapClusterRoles are the ClusterRoles of the node bootstrap
// grants that upstream's policy lacks.
func NodeBootstrapClusterRoles() []rbacv1.ClusterRole {
	r := rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: servingApproverRole}, Rules: []rbacv1.PolicyRule{
		rule("get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").build(),
		rule("update").groups(certificatesGroup).resources("certificatesigningrequests/approval").build(),
		rule("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/kubelet-serving").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
	}}
	defaultMetadata(&r.ObjectMeta)
	return []rbacv1.ClusterRole{r}
}

// clusterInfoRoleName is the Role letting anyone read cluster-info
// (kubeadm's kubeadm:bootstrap-signer-clusterinfo).
const clusterInfoRoleName = "myriad:bootstrap-signer-clusterinfo"

// NodeBootstrapNamespaceRoles lets system:anonymous get kube-public's
// cluster-info ConfigMap, which a joining node reads before it has any
// credentials (and verifies by its token's JWS signature), as kubeadm.
func NodeBootstrapNamespaceRoles() map[string][]rbacv1.Role {
	r := namespaceRole(clusterInfoRoleName,
		rule("get").groups(legacyGroup).resources("configmaps").names("cluster-info").build())
	r.Namespace = metav1.NamespacePublic
	defaultMetadata(&r.ObjectMeta)
	return map[string][]rbacv1.Role{metav1.NamespacePublic: {r}}
}

// NodeBootstrapNamespaceRoleBindings binds NodeBootstrapNamespaceRoles.
func NodeBootstrapNamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	b := roleBinding(clusterInfoRoleName, metav1.NamespacePublic, userSubject("system:anonymous"))
	defaultMetadata(&b.ObjectMeta)
	return map[string][]rbacv1.RoleBinding{metav1.NamespacePublic: {b}}
}
