package node

import (
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
)

// rule is one PolicyRule of upstream's system:node role (bootstrappolicy
// NodeRules). Resources are "resource" or "resource/subresource".
type rule struct {
	verbs, groups, resources []string
}

var (
	read = []string{"get", "list", "watch"}
	core = []string{""}
)

// nodeRules are upstream v1.34's NodeRules with its default feature gates
// (DynamicResourceAllocation on, KubeletServiceAccountTokenForCredentialProviders
// on, ClusterTrustBundle and PodCertificateRequest off): what a node may do
// beyond the resources the authorizer subdivides.
var nodeRules = []rule{
	{[]string{"create"}, []string{"authentication.k8s.io"}, []string{"tokenreviews"}},
	{[]string{"create"}, []string{"authorization.k8s.io"}, []string{"subjectaccessreviews", "localsubjectaccessreviews"}},
	{read, core, []string{"services"}},
	{[]string{"create", "get", "list", "watch"}, core, []string{"nodes"}},
	{[]string{"update", "patch"}, core, []string{"nodes/status"}},
	{[]string{"update", "patch"}, core, []string{"nodes"}},
	{[]string{"create", "update", "patch"}, core, []string{"events"}},
	{read, core, []string{"pods"}},
	{[]string{"create", "delete"}, core, []string{"pods"}},
	{[]string{"update", "patch"}, core, []string{"pods/status"}},
	{[]string{"create"}, core, []string{"pods/eviction"}},
	{[]string{"get", "list", "watch"}, core, []string{"secrets", "configmaps"}},
	{[]string{"get"}, core, []string{"persistentvolumeclaims", "persistentvolumes"}},
	{[]string{"get"}, core, []string{"endpoints"}},
	{[]string{"create", "get", "list", "watch"}, []string{"certificates.k8s.io"}, []string{"certificatesigningrequests"}},
	{[]string{"get", "create", "update", "patch", "delete"}, []string{"coordination.k8s.io"}, []string{"leases"}},
	{[]string{"get"}, []string{"storage.k8s.io"}, []string{"volumeattachments"}},
	{[]string{"create"}, core, []string{"serviceaccounts/token"}},
	{[]string{"get", "update", "patch"}, core, []string{"persistentvolumeclaims/status"}},
	{[]string{"get", "watch", "list"}, []string{"storage.k8s.io"}, []string{"csidrivers"}},
	{[]string{"get", "create", "update", "patch", "delete"}, []string{"storage.k8s.io"}, []string{"csinodes"}},
	{read, []string{"node.k8s.io"}, []string{"runtimeclasses"}},
	{[]string{"get"}, []string{"resource.k8s.io"}, []string{"resourceclaims"}},
	{[]string{"deletecollection"}, []string{"resource.k8s.io"}, []string{"resourceslices"}},
	{[]string{"get"}, core, []string{"serviceaccounts"}},
}

// staticRulesAllow reports whether a node rule covers a resource request,
// as RBAC's RulesAllow. The rules name no non-resource URLs.
func staticRulesAllow(a authz.Attributes) bool {
	if !a.IsResourceRequest {
		return false
	}
	for i := range nodeRules {
		r := &nodeRules[i]
		if has(r.verbs, a.Verb) && has(r.groups, a.APIGroup) && coversResource(r.resources, a.Resource, a.Subresource) {
			return true
		}
	}
	return false
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// coversResource matches "resource" or, for a subresource,
// "resource/subresource" (the node rules use no wildcards).
func coversResource(list []string, resource, sub string) bool {
	for _, x := range list {
		if sub == "" {
			if x == resource {
				return true
			}
			continue
		}
		if len(x) == len(resource)+1+len(sub) && x[:len(resource)] == resource && x[len(resource)] == '/' && x[len(resource)+1:] == sub {
			return true
		}
	}
	return false
}
