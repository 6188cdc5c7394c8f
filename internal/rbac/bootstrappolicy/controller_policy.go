package bootstrappolicy

import (
	"strings"

	capi "k8s.io/api/certificates/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is upstream's controller_policy.go (Kubernetes v1.34): one
// ClusterRole per controller, bound to the controller's ServiceAccount in
// kube-system, as kube-controller-manager's --use-service-account-credentials
// runs them.

// ControllerRolePrefix starts every controller role's name; the rest is
// the name of the controller's ServiceAccount in kube-system.
const ControllerRolePrefix = "system:controller:"

// legacyTokenTrackingConfigMap is the ConfigMap the API server records
// legacy token use in (upstream's legacytokentracking.ConfigMapName).
const legacyTokenTrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"

// controllerRoles holds the roles in registration order.
type controllerRoles struct {
	roles    []rbacv1.ClusterRole
	bindings []rbacv1.ClusterRoleBinding
}

// add registers a controller's role and binds it to the ServiceAccount its
// name ends with. Names are static data: a malformed or repeated one is a
// bug in this file and panics in every test that builds the policy.
func (c *controllerRoles) add(role rbacv1.ClusterRole) {
	sa, ok := strings.CutPrefix(role.Name, ControllerRolePrefix)
	if !ok {
		panic("bootstrappolicy: controller role " + role.Name + " lacks prefix " + ControllerRolePrefix)
	}
	for _, r := range c.roles {
		if r.Name == role.Name {
			panic("bootstrappolicy: controller role " + role.Name + " registered twice")
		}
	}
	defaultMetadata(&role.ObjectMeta)
	c.roles = append(c.roles, role)
	b := clusterBinding(role.Name, saSubject(metav1.NamespaceSystem, sa))
	defaultMetadata(&b.ObjectMeta)
	c.bindings = append(c.bindings, b)
}

func controllerRole(sa string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ControllerRolePrefix + sa}, Rules: rules}
}

func buildControllerRoles() *controllerRoles {
	c := &controllerRoles{}
	c.add(controllerRole("attachdetach-controller",
		rule("list", "watch").groups(legacyGroup).resources("persistentvolumes", "persistentvolumeclaims").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
		rule("patch", "update").groups(legacyGroup).resources("nodes/status").build(),
		rule("list", "watch").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
		rule("get", "create", "delete", "list", "watch").groups(storageGroup).resources("volumeattachments").build(),
		rule("get", "watch", "list").groups(storageGroup).resources("csidrivers").build(),
		rule("get", "watch", "list").groups(storageGroup).resources("csinodes").build(),
	))
	c.add(controllerRole("clusterrole-aggregation-controller",
		// Full power over clusterroles: it writes rules it does not hold.
		rule("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").build(),
	))
	c.add(controllerRole("cronjob-controller",
		rule("get", "list", "watch", "update").groups(batchGroup).resources("cronjobs").build(),
		rule("get", "list", "watch", "create", "update", "delete", "patch").groups(batchGroup).resources("jobs").build(),
		rule("update").groups(batchGroup).resources("cronjobs/status").build(),
		rule("update").groups(batchGroup).resources("cronjobs/finalizers").build(),
		rule("list", "watch", "delete").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("daemon-set-controller",
		rule("get", "list", "watch").groups(extensionsGroup, appsGroup).resources("daemonsets").build(),
		rule("update").groups(extensionsGroup, appsGroup).resources("daemonsets/status").build(),
		rule("update").groups(extensionsGroup, appsGroup).resources("daemonsets/finalizers").build(),
		rule("list", "watch").groups(legacyGroup).resources("nodes").build(),
		rule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods").build(),
		rule("create").groups(legacyGroup).resources("pods/binding").build(),
		rule("get", "list", "watch", "create", "delete", "update", "patch").groups(appsGroup).resources("controllerrevisions").build(),
		eventsRule(),
	))
	c.add(controllerRole("deployment-controller",
		rule("get", "list", "watch", "update").groups(extensionsGroup, appsGroup).resources("deployments").build(),
		rule("update").groups(extensionsGroup, appsGroup).resources("deployments/status").build(),
		rule("update").groups(extensionsGroup, appsGroup).resources("deployments/finalizers").build(),
		rule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets").build(),
		// update: upstream kubernetes#36897.
		rule("get", "list", "watch", "update").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("disruption-controller",
		rule("get", "list", "watch").groups(extensionsGroup, appsGroup).resources("deployments").build(),
		rule("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("replicasets").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("replicationcontrollers").build(),
		rule("get", "list", "watch").groups(policyGroup).resources("poddisruptionbudgets").build(),
		rule("get", "list", "watch").groups(appsGroup).resources("statefulsets").build(),
		rule("update").groups(policyGroup).resources("poddisruptionbudgets/status").build(),
		rule("patch", "update").groups(legacyGroup).resources("pods/status").build(),
		rule("get").groups("*").resources("*/scale").build(),
		eventsRule(),
	))
	c.add(controllerRole("endpoint-controller",
		rule("get", "list", "watch").groups(legacyGroup).resources("services", "pods").build(),
		rule("get", "list", "watch", "create", "update", "delete").groups(legacyGroup).resources("endpoints").build(),
		rule("create").groups(legacyGroup).resources("endpoints/restricted").build(),
		eventsRule(),
	))
	c.add(controllerRole("endpointslice-controller",
		rule("get", "list", "watch").groups(legacyGroup).resources("services", "pods", "nodes").build(),
		// Slices owned by a Service with blockOwnerDeletion need its finalizers.
		rule("update").groups(legacyGroup).resources("services/finalizers").build(),
		rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").build(),
		eventsRule(),
	))
	c.add(controllerRole("endpointslicemirroring-controller",
		rule("get", "list", "watch").groups(legacyGroup).resources("services", "endpoints").build(),
		rule("update").groups(legacyGroup).resources("services/finalizers").build(),
		rule("update").groups(legacyGroup).resources("endpoints/finalizers").build(),
		rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").build(),
		eventsRule(),
	))
	c.add(controllerRole("expand-controller",
		rule("get", "list", "watch", "update", "patch").groups(legacyGroup).resources("persistentvolumes").build(),
		rule("update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		eventsRule(),
		// The portworx volume plugin.
		rule("get").groups(legacyGroup).resources("services").build(),
	))
	c.add(controllerRole("ephemeral-volume-controller",
		rule("get", "list", "watch").groups(legacyGroup).resources("pods").build(),
		rule("update").groups(legacyGroup).resources("pods/finalizers").build(),
		rule("get", "list", "watch", "create").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		eventsRule(),
	))
	// DynamicResourceAllocation (GA, on); DRADeviceTaints (alpha, off): no
	// device-taint-eviction-controller.
	c.add(controllerRole("resource-claim-controller",
		rule("get", "list", "watch").groups(legacyGroup).resources("pods").build(),
		rule("update").groups(legacyGroup).resources("pods/finalizers").build(),
		rule("get", "list", "watch", "create", "delete").groups(resourceGroup).resources("resourceclaims").build(),
		rule("update", "patch").groups(resourceGroup).resources("resourceclaims", "resourceclaims/status").build(),
		rule("update", "patch").groups(legacyGroup).resources("pods/status").build(),
		eventsRule(),
	))
	c.add(controllerRole("generic-garbage-collector",
		// List, watch, selective gets and updates of anything.
		rule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").build(),
		eventsRule(),
	))
	c.add(controllerRole("horizontal-pod-autoscaler",
		rule("get", "list", "watch").groups(autoscalingGroup).resources("horizontalpodautoscalers").build(),
		rule("update").groups(autoscalingGroup).resources("horizontalpodautoscalers/status").build(),
		rule("get", "update").groups("*").resources("*/scale").build(),
		rule("list", "watch").groups(legacyGroup).resources("pods").build(),
		// Resource, custom and external metrics.
		rule("list", "watch").groups(resMetricsGroup).resources("pods").build(),
		rule("get", "list", "watch").groups(customMetricsGroup).resources("*").build(),
		rule("get", "list", "watch").groups(externalMetricsGroup).resources("*").build(),
		eventsRule(),
	))
	c.add(controllerRole("job-controller",
		rule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs").build(),
		rule("update").groups(batchGroup).resources("jobs/status").build(),
		rule("update").groups(batchGroup).resources("jobs/finalizers").build(),
		rule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("namespace-controller",
		rule("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces").build(),
		rule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").build(),
		rule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*").build(),
	))
	c.add(controllerRole("node-controller",
		rule("get", "list", "watch", "update", "delete", "patch").groups(legacyGroup).resources("nodes").build(),
		rule("patch", "update").groups(legacyGroup).resources("nodes/status").build(),
		// Pod deletion.
		rule("patch", "update").groups(legacyGroup).resources("pods/status").build(),
		rule("list", "watch", "get", "delete").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("persistent-volume-binder",
		rule("get", "list", "watch", "update", "create", "delete").groups(legacyGroup).resources("persistentvolumes").build(),
		rule("update").groups(legacyGroup).resources("persistentvolumes/status").build(),
		rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		rule("update").groups(legacyGroup).resources("persistentvolumeclaims/status").build(),
		rule("list", "watch", "get", "create", "delete").groups(legacyGroup).resources("pods").build(),
		rule("get", "list", "watch").groups(storageGroup).resources("storageclasses").build(),
		rule("list", "watch").groups(legacyGroup).resources("nodes").build(),
		eventsRule(),
		// The recycler watches its pod's events.
		rule("watch").groups(legacyGroup).resources("events").build(),
		// The portworx volume plugin.
		rule("get").groups(legacyGroup).resources("services").build(),
	))
	c.add(controllerRole("pod-garbage-collector",
		rule("list", "watch", "delete").groups(legacyGroup).resources("pods").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
		rule("patch").groups(legacyGroup).resources("pods/status").build(),
	))
	c.add(controllerRole("replicaset-controller",
		rule("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("replicasets").build(),
		rule("update").groups(appsGroup, extensionsGroup).resources("replicasets/status").build(),
		rule("update").groups(appsGroup, extensionsGroup).resources("replicasets/finalizers").build(),
		rule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("replication-controller",
		// get and update: 1.0 controllers break on new servers without them.
		rule("get", "list", "watch", "update").groups(legacyGroup).resources("replicationcontrollers").build(),
		rule("update").groups(legacyGroup).resources("replicationcontrollers/status").build(),
		rule("update").groups(legacyGroup).resources("replicationcontrollers/finalizers").build(),
		rule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("resourcequota-controller",
		// Quota may count anything, so it reads everything.
		rule("list", "watch").groups("*").resources("*").build(),
		rule("update").groups(legacyGroup).resources("resourcequotas/status").build(),
		eventsRule(),
	))
	c.add(controllerRole("route-controller",
		rule("list", "watch").groups(legacyGroup).resources("nodes").build(),
		rule("patch").groups(legacyGroup).resources("nodes/status").build(),
		eventsRule(),
	))
	c.add(controllerRole("service-account-controller",
		rule("create").groups(legacyGroup).resources("serviceaccounts").build(),
		eventsRule(),
	))
	c.add(controllerRole("service-controller",
		rule("get", "list", "watch").groups(legacyGroup).resources("services").build(),
		rule("patch", "update").groups(legacyGroup).resources("services/status").build(),
		rule("list", "watch").groups(legacyGroup).resources("nodes").build(),
		eventsRule(),
	))
	// MultiCIDRServiceAllocator (GA, on).
	c.add(controllerRole("service-cidrs-controller",
		rule("get", "list", "watch", "patch", "update").groups(networkingGroup).resources("servicecidrs").build(),
		rule("patch", "update").groups(networkingGroup).resources("servicecidrs/finalizers").build(),
		rule("patch", "update").groups(networkingGroup).resources("servicecidrs/status").build(),
		rule("get", "list", "watch").groups(networkingGroup).resources("ipaddresses").build(),
		eventsRule(),
	))
	c.add(controllerRole("statefulset-controller",
		rule("list", "watch").groups(legacyGroup).resources("pods").build(),
		rule("get", "list", "watch").groups(appsGroup).resources("statefulsets").build(),
		rule("update").groups(appsGroup).resources("statefulsets/status").build(),
		rule("update").groups(appsGroup).resources("statefulsets/finalizers").build(),
		rule("get", "create", "delete", "update", "patch").groups(legacyGroup).resources("pods").build(),
		rule("get", "create", "delete", "update", "patch", "list", "watch").groups(appsGroup).resources("controllerrevisions").build(),
		rule("get", "create", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		eventsRule(),
		// StatefulSetAutoDeletePVC (GA, on).
		rule("update", "delete").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		rule("update").groups(legacyGroup).resources("pods/finalizers").build(),
	))
	c.add(controllerRole("ttl-controller",
		rule("update", "patch", "list", "watch").groups(legacyGroup).resources("nodes").build(),
		eventsRule(),
	))
	c.add(controllerRole("certificate-controller",
		rule("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests").build(),
		rule("update").groups(certificatesGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval").build(),
		rule("approve").groups(certificatesGroup).resources("signers").names(capi.KubeAPIServerClientKubeletSignerName).build(),
		rule("sign").groups(certificatesGroup).resources("signers").names(
			capi.LegacyUnknownSignerName,
			capi.KubeAPIServerClientSignerName,
			capi.KubeAPIServerClientKubeletSignerName,
			capi.KubeletServingSignerName,
		).build(),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews").build(),
		eventsRule(),
	))
	// PodCertificateRequest (alpha, off): no podcertificaterequestcleaner.
	c.add(controllerRole("pvc-protection-controller",
		rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		rule("list", "watch", "get").groups(legacyGroup).resources("pods").build(),
		eventsRule(),
	))
	c.add(controllerRole("pv-protection-controller",
		rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumes").build(),
		eventsRule(),
	))
	// VolumeAttributesClass (GA, on).
	c.add(controllerRole("volumeattributesclass-protection-controller",
		rule("list", "watch", "get").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		rule("list", "watch", "get").groups(legacyGroup).resources("persistentvolumes").build(),
		rule("get", "list", "watch", "update").groups(storageGroup).resources("volumeattributesclasses").build(),
		eventsRule(),
	))
	c.add(controllerRole("ttl-after-finished-controller",
		rule("get", "list", "watch", "delete").groups(batchGroup).resources("jobs").build(),
		eventsRule(),
	))
	c.add(controllerRole("root-ca-cert-publisher",
		rule("create", "update").groups(legacyGroup).resources("configmaps").build(),
		eventsRule(),
	))
	// ClusterTrustBundle (beta, off): no kube-apiserver-serving-clustertrustbundle-publisher.
	c.add(controllerRole("validatingadmissionpolicy-status-controller",
		rule("get", "list", "watch").groups(admissionRegistrationGroup).resources("validatingadmissionpolicies").build(),
		rule("get", "patch", "update").groups(admissionRegistrationGroup).resources("validatingadmissionpolicies/status").build(),
		eventsRule(),
	))
	// StorageVersionAPI with APIServerIdentity (alpha, off): no
	// storage-version-garbage-collector.
	c.add(controllerRole("legacy-service-account-token-cleaner",
		rule("get").groups(legacyGroup).resources("configmaps").names(legacyTokenTrackingConfigMap).build(),
		rule("patch", "delete").groups(legacyGroup).resources("secrets").build(),
	))
	// StorageVersionMigrator (alpha, off): no storage-version-migrator-controller.
	// SELinuxChangePolicy (beta, on).
	c.add(controllerRole("selinux-warning-controller",
		eventsRule(),
		rule("get", "list", "watch").groups(legacyGroup).resources("persistentvolumes").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims").build(),
		rule("get", "list", "watch").groups(legacyGroup).resources("pods").build(),
		rule("get", "list", "watch").groups(storageGroup).resources("csidrivers").build(),
	))
	return c
}

// ControllerRoles are the system:controller:* ClusterRoles.
func ControllerRoles() []rbacv1.ClusterRole { return buildControllerRoles().roles }

// ControllerRoleBindings bind each controller role to its ServiceAccount
// in kube-system.
func ControllerRoleBindings() []rbacv1.ClusterRoleBinding { return buildControllerRoles().bindings }
