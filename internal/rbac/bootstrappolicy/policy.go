package bootstrappolicy

import (
	capi "k8s.io/api/certificates/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is upstream's policy.go (Kubernetes v1.34). Where upstream
// branches on a feature gate the branch v1.34's default takes is written
// out and the gate named in a comment: Myriad has no feature gates, and
// the golden files are upstream's defaults.

// Well-known identities (k8s.io/apiserver/pkg/authentication/user and
// serviceaccount).
const (
	systemPrivilegedGroup   = "system:masters"
	monitoringGroup         = "system:monitoring"
	allAuthenticated        = "system:authenticated"
	allUnauthenticated      = "system:unauthenticated"
	allServiceAccountsGroup = "system:serviceaccounts"
	kubeProxyUser           = "system:kube-proxy"
	kubeControllerManager   = "system:kube-controller-manager"
	kubeSchedulerUser       = "system:kube-scheduler"
)

// SystemNodeRoleName is the role the Node authorizer's rules are checked
// against (nodes get it through that authorizer, not through a binding).
const SystemNodeRoleName = "system:node"

// Aggregation labels: a ClusterRole carrying one has its rules added to
// admin, edit or view by the aggregation controller.
const (
	AggregateToAdminLabel = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEditLabel  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToViewLabel  = "rbac.authorization.k8s.io/aggregate-to-view"
)

func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(readVerbs()...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").build(),
		rule(readVerbs()...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").build(),
		// Reading namespaces at namespace scope means reading *this*
		// namespace: a way to tell which namespaces one has access to.
		rule(readVerbs()...).groups(legacyGroup).resources("namespaces").build(),
		rule(readVerbs()...).groups(discoveryGroup).resources("endpointslices").build(),
		rule(readVerbs()...).groups(appsGroup).resources(
			"controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale").build(),
		rule(readVerbs()...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").build(),
		rule(readVerbs()...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").build(),
		rule(readVerbs()...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies").build(),
		rule(readVerbs()...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").build(),
		rule(readVerbs()...).groups(networkingGroup).resources("networkpolicies", "ingresses", "ingresses/status").build(),
		// DynamicResourceAllocation (GA, on).
		rule(readVerbs()...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates").build(),
	}
}

func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Read on the escalating resources view leaves out.
		rule(readVerbs()...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").build(),
		rule("impersonate").groups(legacyGroup).resources("serviceaccounts").build(),
		rule(writeVerbs()...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").build(),
		rule("create").groups(legacyGroup).resources("pods/eviction").build(),
		rule(writeVerbs()...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events").build(),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token").build(),
		rule(writeVerbs()...).groups(appsGroup).resources(
			"statefulsets", "statefulsets/scale",
			"daemonsets",
			"deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale").build(),
		rule(writeVerbs()...).groups(autoscalingGroup).resources("horizontalpodautoscalers").build(),
		rule(writeVerbs()...).groups(batchGroup).resources("jobs", "cronjobs").build(),
		rule(writeVerbs()...).groups(extensionsGroup).resources("daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale",
			"networkpolicies").build(),
		rule(writeVerbs()...).groups(policyGroup).resources("poddisruptionbudgets").build(),
		rule(writeVerbs()...).groups(networkingGroup).resources("networkpolicies", "ingresses").build(),
		rule(readWriteVerbs()...).groups(coordinationGroup).resources("leases").build(),
		// DynamicResourceAllocation (GA, on).
		rule(writeVerbs()...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates").build(),
	}
}

// NodeRules are the rules of system:node: what any kubelet may do. The
// Node authorizer narrows them to the node's own objects.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// API access checks; these creates do not mutate.
		rule("create").groups(authenticationGroup).resources("tokenreviews").build(),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").build(),
		// The service lister behind pods' service environment variables.
		rule(readVerbs()...).groups(legacyGroup).resources("services").build(),
		// Registering and reporting on Nodes (NodeRestriction limits a node
		// to its own).
		rule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
		rule("update", "patch").groups(legacyGroup).resources("nodes/status").build(),
		rule("update", "patch").groups(legacyGroup).resources("nodes").build(),
		rule("create", "update", "patch").groups(legacyGroup).resources("events").build(),
		rule(readVerbs()...).groups(legacyGroup).resources("pods").build(),
		// Mirror pods, pod status and evictions of the node's own pods.
		rule("create", "delete").groups(legacyGroup).resources("pods").build(),
		rule("update", "patch").groups(legacyGroup).resources("pods/status").build(),
		rule("create").groups(legacyGroup).resources("pods/eviction").build(),
		// Secrets and ConfigMaps of pods bound to the node (the Node
		// authorizer enforces which).
		rule("get", "list", "watch").groups(legacyGroup).resources("secrets", "configmaps").build(),
		rule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").build(),
		rule("get").groups(legacyGroup).resources("endpoints").build(),
		// Client certificate rotation.
		rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").build(),
		rule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").build(),
		rule("get").groups(storageGroup).resources("volumeattachments").build(),
		// Tokens for the service accounts of pods on the node.
		rule("create").groups(legacyGroup).resources("serviceaccounts/token").build(),
		rule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").build(),
		rule("get", "watch", "list").groups(storageGroup).resources("csidrivers").build(),
		rule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes").build(),
		rule("get", "list", "watch").groups(nodeGroup).resources("runtimeclasses").build(),
		// DynamicResourceAllocation (GA, on).
		rule("get").groups(resourceGroup).resources("resourceclaims").build(),
		rule("deletecollection").groups(resourceGroup).resources("resourceslices").build(),
		// ClusterTrustBundle (beta, off): no clustertrustbundles rule.
		// KubeletServiceAccountTokenForCredentialProviders (beta, on).
		rule("get").groups(legacyGroup).resources("serviceaccounts").build(),
		// PodCertificateRequest (alpha, off): no podcertificaterequests rule.
	}
}

// ClusterRoles are the default ClusterRoles other than the controllers'.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		{
			// Anything at all.
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			Rules: []rbacv1.PolicyRule{
				rule("*").groups("*").resources("*").build(),
				rule("*").urls("*").build(),
			},
		},
		{
			// Enough to tell whether the server is up and to discover its APIs.
			ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls(
					"/livez", "/readyz", "/healthz",
					"/version", "/version/",
					"/openapi", "/openapi/*",
					"/api", "/api/*",
					"/apis", "/apis/*",
				).build(),
			},
		},
		{
			// Metrics and the individual health checks, which may say more
			// about the cluster than the aggregate ones.
			ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls(
					"/metrics", "/metrics/slis",
					"/livez", "/readyz", "/healthz",
					"/livez/*", "/readyz/*", "/healthz/*",
				).build(),
				rule("get").groups(legacyGroup).resources("nodes/metrics").build(),
				// ComponentFlagz, ComponentStatusz (alpha, off): no /flagz, /statusz.
			},
		},
		{
			// What a user needs to learn about themselves.
			ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").build(),
				rule("create").groups(authenticationGroup).resources("selfsubjectreviews").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:public-info-viewer"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").build(),
			},
		},
		{
			// A namespace admin: edit plus granting permissions to others.
			ObjectMeta: metav1.ObjectMeta{Name: "admin"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{AggregateToAdminLabel: "true"}},
			}},
		},
		{
			// Every user-level action in a namespace, but not the
			// "privileged" resources (status, quota, limits).
			ObjectMeta: metav1.ObjectMeta{Name: "edit", Labels: map[string]string{AggregateToAdminLabel: "true"}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{AggregateToEditLabel: "true"}},
			}},
		},
		{
			// Reading what does not escalate in a namespace.
			ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: map[string]string{AggregateToEditLabel: "true"}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{AggregateToViewLabel: "true"}},
			}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-admin", Labels: map[string]string{AggregateToAdminLabel: "true"}},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").build(),
				rule(readWriteVerbs()...).groups(rbacGroup).resources("roles", "rolebindings").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{AggregateToEditLabel: "true"}},
			Rules:      editRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{AggregateToViewLabel: "true"}},
			Rules:      viewRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:heapster"},
			Rules: []rbacv1.PolicyRule{
				rule(readVerbs()...).groups(legacyGroup).resources("events", "pods", "nodes", "namespaces").build(),
				rule(readVerbs()...).groups(extensionsGroup).resources("deployments").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: SystemNodeRoleName},
			Rules:      NodeRules(),
		},
		{
			// Not bound anywhere: where node-problem-detector runs varies.
			ObjectMeta: metav1.ObjectMeta{Name: "system:node-problem-detector"},
			Rules: []rbacv1.PolicyRule{
				rule("get").groups(legacyGroup).resources("nodes").build(),
				rule("patch").groups(legacyGroup).resources("nodes/status").build(),
				eventsRule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:node-bootstrapper"},
			Rules: []rbacv1.PolicyRule{
				rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").build(),
			},
		},
		{
			// Delegated authentication and authorization.
			ObjectMeta: metav1.ObjectMeta{Name: "system:auth-delegator"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authenticationGroup).resources("tokenreviews").build(),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-aggregator"},
			Rules: []rbacv1.PolicyRule{
				rule(readVerbs()...).groups(legacyGroup).resources("services", "endpoints").build(),
			},
		},
		{
			// Enough for the controller manager's shared informers and to
			// mint the per-controller service accounts and their tokens.
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-controller-manager"},
			Rules: []rbacv1.PolicyRule{
				eventsRule(),
				rule("create").groups(coordinationGroup).resources("leases").build(),
				rule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager").build(),
				rule("create").groups(legacyGroup).resources("secrets", "serviceaccounts").build(),
				rule("delete").groups(legacyGroup).resources("secrets").build(),
				rule("get").groups(legacyGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps").build(),
				rule("update").groups(legacyGroup).resources("secrets", "serviceaccounts").build(),
				rule("create").groups(authenticationGroup).resources("tokenreviews").build(),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews").build(),
				rule("list", "watch").groups("*").resources("*").build(),
				rule("create").groups(legacyGroup).resources("serviceaccounts/token").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-dns"},
			Rules: []rbacv1.PolicyRule{
				rule("list", "watch").groups(legacyGroup).resources("endpoints", "services").build(),
			},
		},
		{
			// An external persistent volume provisioner.
			ObjectMeta: metav1.ObjectMeta{Name: "system:persistent-volume-provisioner"},
			Rules: []rbacv1.PolicyRule{
				rule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes").build(),
				// update: lock annotations on PVCs.
				rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims").build(),
				rule(readVerbs()...).groups(storageGroup).resources("storageclasses").build(),
				rule("watch").groups(legacyGroup).resources("events").build(),
				eventsRule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:volume-scheduler"},
			Rules: []rbacv1.PolicyRule{
				rule(readUpdateVerbs()...).groups(legacyGroup).resources("persistentvolumes").build(),
				rule(readVerbs()...).groups(storageGroup).resources("storageclasses").build(),
				rule(readUpdateVerbs()...).groups(legacyGroup).resources("persistentvolumeclaims").build(),
			},
		},
		approverRole("system:certificates.k8s.io:legacy-unknown-approver", capi.LegacyUnknownSignerName),
		approverRole("system:certificates.k8s.io:kubelet-serving-approver", capi.KubeletServingSignerName),
		approverRole("system:certificates.k8s.io:kube-apiserver-client-approver", capi.KubeAPIServerClientSignerName),
		approverRole("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", capi.KubeAPIServerClientKubeletSignerName),
		{
			// ServiceAccount issuer discovery; the slash-ended URLs serve
			// clients generated from openapi documents that had them.
			ObjectMeta: metav1.ObjectMeta{Name: "system:service-account-issuer-discovery"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls(
					"/.well-known/openid-configuration",
					"/.well-known/openid-configuration/",
					"/openid/v1/jwks",
					"/openid/v1/jwks/",
				).build(),
			},
		},
		{
			// Full access to the kubelet API.
			ObjectMeta: metav1.ObjectMeta{Name: "system:kubelet-api-admin"},
			Rules: []rbacv1.PolicyRule{
				rule("get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
				rule("proxy").groups(legacyGroup).resources("nodes").build(),
				rule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log").build(),
				// KubeletFineGrainedAuthz (beta, on).
				rule("*").groups(legacyGroup).resources("nodes/pods", "nodes/healthz", "nodes/configz").build(),
			},
		},
		{
			// kube-proxy.
			ObjectMeta: metav1.ObjectMeta{Name: "system:node-proxier"},
			Rules: []rbacv1.PolicyRule{
				rule("list", "watch").groups(legacyGroup).resources("services", "endpoints").build(),
				rule("get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
				eventsRule(),
				// MultiCIDRServiceAllocator (GA, on).
				rule("list", "watch").groups(networkingGroup).resources("servicecidrs").build(),
				rule("list", "watch").groups(discoveryGroup).resources("endpointslices").build(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-scheduler"},
			Rules:      kubeSchedulerRules(),
		},
		// ClusterTrustBundle (beta, off): no system:cluster-trust-bundle-discovery.
	}
	for i := range roles {
		defaultMetadata(&roles[i].ObjectMeta)
	}
	return roles
}

func approverRole(name, signer string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			rule("approve").groups(certificatesGroup).resources("signers").names(signer).build(),
		},
	}
}

func kubeSchedulerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		eventsRule(),
		// Leader election.
		rule("create").groups(coordinationGroup).resources("leases").build(),
		rule("get", "update", "list", "watch").groups(coordinationGroup).resources("leases").names("kube-scheduler").build(),
		rule(readWriteVerbs()...).groups(coordinationGroup).resources("leasecandidates").build(),
		rule(readVerbs()...).groups(legacyGroup).resources("nodes").build(),
		rule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods").build(),
		rule("create").groups(legacyGroup).resources("pods/binding", "bindings").build(),
		rule("patch", "update").groups(legacyGroup).resources("pods/status").build(),
		// What selects pods.
		rule(readVerbs()...).groups(legacyGroup).resources("services", "replicationcontrollers").build(),
		rule(readVerbs()...).groups(appsGroup, extensionsGroup).resources("replicasets").build(),
		rule(readVerbs()...).groups(appsGroup).resources("statefulsets").build(),
		// What pods use or what applies to them.
		rule(readVerbs()...).groups(policyGroup).resources("poddisruptionbudgets").build(),
		rule(readVerbs()...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").build(),
		rule("create").groups(authenticationGroup).resources("tokenreviews").build(),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews").build(),
		// Volume limits.
		rule(readVerbs()...).groups(storageGroup).resources("csinodes").build(),
		rule("get", "list", "watch").groups(storageGroup).resources("volumeattachments").build(),
		// Pod affinity's namespaceSelector.
		rule(readVerbs()...).groups(legacyGroup).resources("namespaces").build(),
		rule(readVerbs()...).groups(storageGroup).resources("csidrivers").build(),
		rule(readVerbs()...).groups(storageGroup).resources("csistoragecapacities").build(),
		// DynamicResourceAllocation (GA, on); DRAExtendedResource and
		// DRADeviceTaints (alpha, off) add nothing.
		rule(readVerbs()...).groups(resourceGroup).resources("deviceclasses").build(),
		rule(readUpdateVerbs()...).groups(resourceGroup).resources("resourceclaims").build(),
		rule(readUpdateVerbs()...).groups(resourceGroup).resources("resourceclaims/status").build(),
		rule("update").groups(legacyGroup).resources("pods/finalizers").build(),
		rule(readVerbs()...).groups(resourceGroup).resources("resourceslices").build(),
	}
}

// ClusterRoleBindings bind the default ClusterRoles to their subjects.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", groupSubject(systemPrivilegedGroup)),
		clusterBinding("system:monitoring", groupSubject(monitoringGroup)),
		clusterBinding("system:discovery", groupSubject(allAuthenticated)),
		clusterBinding("system:basic-user", groupSubject(allAuthenticated)),
		clusterBinding("system:public-info-viewer", groupSubject(allAuthenticated), groupSubject(allUnauthenticated)),
		clusterBinding("system:node-proxier", userSubject(kubeProxyUser)),
		clusterBinding("system:kube-controller-manager", userSubject(kubeControllerManager)),
		clusterBinding("system:kube-dns", saSubject(metav1.NamespaceSystem, "kube-dns")),
		clusterBinding("system:kube-scheduler", userSubject(kubeSchedulerUser)),
		clusterBinding("system:volume-scheduler", userSubject(kubeSchedulerUser)),
		{
			// Nodes get system:node through the Node authorizer; upstream
			// keeps this binding with no subjects so that reconciliation
			// of clusters from before 1.7 can drop the group.
			ObjectMeta: metav1.ObjectMeta{Name: SystemNodeRoleName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SystemNodeRoleName},
		},
		// Every workload may read the OIDC discovery documents of the
		// issuer of its own token.
		clusterBinding("system:service-account-issuer-discovery", groupSubject(allServiceAccountsGroup)),
		// ClusterTrustBundle (beta, off): no system:cluster-trust-bundle-discovery binding.
	}
	for i := range bindings {
		defaultMetadata(&bindings[i].ObjectMeta)
	}
	return bindings
}
