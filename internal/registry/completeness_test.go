package registry

import (
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file checks that Myriad serves the whole built-in API of
// kube-apiserver v1.34, or says why not.
//
// Where the upstream list comes from:
//
//   - upstreamGroupVersions is the set of group/versions kube-apiserver v1.34
//     enables by default: every GA version, and no beta or alpha one (new
//     beta APIs are off by default since v1.24, so MutatingAdmissionPolicy
//     and ClusterTrustBundle are off; storagemigration.k8s.io is alpha).
//     resource.k8s.io/v1 and volumeattributesclasses went GA in v1.34.
//   - The kinds of each group/version are those its k8s.io/api AddToScheme
//     registers (go.mod's k8s.io/api may be newer than v1.34: see
//     newerThanTarget), less lists, options and the kinds that are not resources
//     (notResourceKinds). apiextensions.k8s.io and apiregistration.k8s.io
//     live outside k8s.io/api, so their kinds are listed by hand.
//   - Kind → resource is meta.UnsafeGuessKindToResource except where
//     resourceNameOverrides says otherwise.
//   - Subresources cannot be derived from types: upstreamSubresources is
//     copied from the discovery of a v1.34 cluster (kubectl api-resources and
//     GET /api/v1, /apis/<group>/<version>).
//
// To move to a new Kubernetes version: bump k8s.io/api, add the group/versions
// that became GA (or default-on), drop removed ones, update
// upstreamSubresources from the new cluster's discovery, and let this test
// tell you which new resources need serving or an exclusion. Kinds that
// k8s.io/api carries but the target release does not serve go in
// newerThanTarget.
//
// Myriad's list is registry.New(). Everything upstream serves that Myriad
// does not must appear in excluded with the reason and, where there is one,
// the issue that will serve it.

// upstreamGroupVersion is one group/version kube-apiserver v1.34 serves by
// default, and how to learn its kinds.
type upstreamGroupVersion struct {
	gv schema.GroupVersion
	// addToScheme registers the group/version's types (k8s.io/api).
	addToScheme func(*runtime.Scheme) error
	// kinds lists the kinds by hand where the types are not in k8s.io/api.
	kinds []string
}

var upstreamGroupVersions = []upstreamGroupVersion{
	{gv: corev1.SchemeGroupVersion, addToScheme: corev1.AddToScheme},
	{gv: admissionregistrationv1.SchemeGroupVersion, addToScheme: admissionregistrationv1.AddToScheme},
	{gv: schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"}, kinds: []string{"CustomResourceDefinition"}},
	{gv: schema.GroupVersion{Group: "apiregistration.k8s.io", Version: "v1"}, kinds: []string{"APIService"}},
	{gv: appsv1.SchemeGroupVersion, addToScheme: appsv1.AddToScheme},
	{gv: authenticationv1.SchemeGroupVersion, addToScheme: authenticationv1.AddToScheme},
	{gv: authorizationv1.SchemeGroupVersion, addToScheme: authorizationv1.AddToScheme},
	{gv: autoscalingv1.SchemeGroupVersion, addToScheme: autoscalingv1.AddToScheme},
	{gv: autoscalingv2.SchemeGroupVersion, addToScheme: autoscalingv2.AddToScheme},
	{gv: batchv1.SchemeGroupVersion, addToScheme: batchv1.AddToScheme},
	{gv: certificatesv1.SchemeGroupVersion, addToScheme: certificatesv1.AddToScheme},
	{gv: coordinationv1.SchemeGroupVersion, addToScheme: coordinationv1.AddToScheme},
	{gv: discoveryv1.SchemeGroupVersion, addToScheme: discoveryv1.AddToScheme},
	{gv: eventsv1.SchemeGroupVersion, addToScheme: eventsv1.AddToScheme},
	{gv: flowcontrolv1.SchemeGroupVersion, addToScheme: flowcontrolv1.AddToScheme},
	{gv: networkingv1.SchemeGroupVersion, addToScheme: networkingv1.AddToScheme},
	{gv: nodev1.SchemeGroupVersion, addToScheme: nodev1.AddToScheme},
	{gv: policyv1.SchemeGroupVersion, addToScheme: policyv1.AddToScheme},
	{gv: rbacv1.SchemeGroupVersion, addToScheme: rbacv1.AddToScheme},
	{gv: resourcev1.SchemeGroupVersion, addToScheme: resourcev1.AddToScheme},
	{gv: schedulingv1.SchemeGroupVersion, addToScheme: schedulingv1.AddToScheme},
	{gv: storagev1.SchemeGroupVersion, addToScheme: storagev1.AddToScheme},
}

// notResourceKinds are registered kinds that are not resources of their own:
// request bodies of subresources, options and apimachinery's shared kinds.
// (Names ending in "List" or "Options" are skipped without being listed.)
var notResourceKinds = map[string]string{
	"WatchEvent":          "the watch stream's envelope (metav1)",
	"Status":              "the error/result body (metav1)",
	"PodStatusResult":     "pods/status's legacy body, not served on its own",
	"RangeAllocation":     "the service IP/port allocators' internal storage",
	"SerializedReference": "an annotation payload, never served",
	"Eviction":            "the body of pods/eviction",
	"Scale":               "the body of */scale",
	"TokenRequest":        "the body of serviceaccounts/token",
	"APIGroup":            "discovery's document (metav1)",
	"APIVersions":         "discovery's document (metav1)",
}

// newerThanTarget are kinds k8s.io/api registers in a served group/version
// that kube-apiserver v1.34 does not serve yet, because go.mod's k8s.io/api
// is newer than the target release.
var newerThanTarget = map[schema.GroupVersionKind]string{
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"):        "beta and off by default in v1.34",
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"): "beta and off by default in v1.34",
	certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"):                      "beta and off by default in v1.34",
	certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"):                   "alpha in v1.34",
	resourcev1.SchemeGroupVersion.WithKind("DeviceTaintRule"):                             "alpha in v1.34",
}

// resourceNameOverrides are kinds whose resource name is not
// meta.UnsafeGuessKindToResource's guess.
var resourceNameOverrides = map[schema.GroupVersionKind]string{
	{Version: "v1", Kind: "Endpoints"}: "endpoints",
}

// upstreamSubresources are the subresources a v1.34 cluster's discovery
// lists, by their parent resource.
var upstreamSubresources = map[schema.GroupVersionResource][]string{
	{Version: "v1", Resource: "namespaces"}:                                  {"finalize", "status"},
	{Version: "v1", Resource: "nodes"}:                                       {"proxy", "status"},
	{Version: "v1", Resource: "persistentvolumeclaims"}:                      {"status"},
	{Version: "v1", Resource: "persistentvolumes"}:                           {"status"},
	{Version: "v1", Resource: "pods"}:                                        {"attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward", "proxy", "resize", "status"},
	{Version: "v1", Resource: "replicationcontrollers"}:                      {"scale", "status"},
	{Version: "v1", Resource: "resourcequotas"}:                              {"status"},
	{Version: "v1", Resource: "serviceaccounts"}:                             {"token"},
	{Version: "v1", Resource: "services"}:                                    {"proxy", "status"},
	gvr("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"): {"status"},
	gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"):           {"status"},
	gvr("apiregistration.k8s.io", "v1", "apiservices"):                       {"status"},
	gvr("apps", "v1", "daemonsets"):                                          {"status"},
	gvr("apps", "v1", "deployments"):                                         {"scale", "status"},
	gvr("apps", "v1", "replicasets"):                                         {"scale", "status"},
	gvr("apps", "v1", "statefulsets"):                                        {"scale", "status"},
	gvr("autoscaling", "v1", "horizontalpodautoscalers"):                     {"status"},
	gvr("autoscaling", "v2", "horizontalpodautoscalers"):                     {"status"},
	gvr("batch", "v1", "cronjobs"):                                           {"status"},
	gvr("batch", "v1", "jobs"):                                               {"status"},
	gvr("certificates.k8s.io", "v1", "certificatesigningrequests"):           {"approval", "status"},
	gvr("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"):                 {"status"},
	gvr("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"): {"status"},
	gvr("networking.k8s.io", "v1", "ingresses"):                              {"status"},
	gvr("networking.k8s.io", "v1", "servicecidrs"):                           {"status"},
	gvr("policy", "v1", "poddisruptionbudgets"):                              {"status"},
	gvr("resource.k8s.io", "v1", "resourceclaims"):                           {"status"},
	gvr("storage.k8s.io", "v1", "volumeattachments"):                         {"status"},
}

// Issue references for exclusions.
const (
	issueSecurity       = "issue 21 (security)"
	issueExtensibility  = "issue 22 (extensibility)"
	issueSeveralServers = "issue 23 (etcd and several API servers)"
	issueWholeAPI       = "issue 28 (the whole built-in API), still owed"
	noIssue             = "no issue yet"
)

// exclusion is why Myriad does not serve an upstream resource or subresource.
type exclusion struct {
	issue  string
	reason string
}

// excluded maps what Myriad deliberately does not serve (yet) to why. Keys
// are "group/version/resource" or ".../resource/subresource", with "core" for
// the empty group, as upstreamAPI spells them.
var excluded = map[string]exclusion{
	// Admission, extensions, aggregation.

	// Flow control.

	// Owed by issue 28.
	"networking.k8s.io/v1/ipaddresses":         {issueSeveralServers, "the service-IP allocator's state moves into the store as IPAddress objects when several API servers share it"},
	"networking.k8s.io/v1/servicecidrs":        {issueSeveralServers, "with ipaddresses"},
	"networking.k8s.io/v1/servicecidrs/status": {issueSeveralServers, "with ipaddresses"},

	// Dynamic resource allocation (GA in v1.34).
	"resource.k8s.io/v1/deviceclasses":          {noIssue, "dynamic resource allocation needs DRA drivers on nodes and the scheduler's DRA plugin"},
	"resource.k8s.io/v1/resourceclaims":         {noIssue, "dynamic resource allocation needs DRA drivers on nodes and the scheduler's DRA plugin"},
	"resource.k8s.io/v1/resourceclaims/status":  {noIssue, "with resourceclaims"},
	"resource.k8s.io/v1/resourceclaimtemplates": {noIssue, "dynamic resource allocation needs DRA drivers on nodes and the scheduler's DRA plugin"},
	"resource.k8s.io/v1/resourceslices":         {noIssue, "dynamic resource allocation needs DRA drivers on nodes and the scheduler's DRA plugin"},
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// apiKey spells a resource or subresource as the keys of excluded do.
func apiKey(r schema.GroupVersionResource, subresource string) string {
	group := r.Group
	if group == "" {
		group = "core"
	}
	k := group + "/" + r.Version + "/" + r.Resource
	if subresource != "" {
		k += "/" + subresource
	}
	return k
}

// upstreamAPI returns every resource and subresource kube-apiserver v1.34
// serves by default, as apiKey spells them. It fails the test on a kind it
// cannot classify, so a new k8s.io/api is noticed.
func upstreamAPI(t *testing.T) map[string]bool {
	t.Helper()
	api := make(map[string]bool)
	for _, ugv := range upstreamGroupVersions {
		kinds := ugv.kinds
		if ugv.addToScheme != nil {
			s := runtime.NewScheme()
			if err := ugv.addToScheme(s); err != nil {
				t.Fatalf("%v: AddToScheme: %v", ugv.gv, err)
			}
			for kind := range s.KnownTypes(ugv.gv) {
				kinds = append(kinds, kind)
			}
		}
		for _, kind := range kinds {
			gvk := ugv.gv.WithKind(kind)
			if strings.HasSuffix(kind, "List") || strings.HasSuffix(kind, "Options") {
				continue
			}
			if _, ok := notResourceKinds[kind]; ok {
				continue
			}
			if _, ok := newerThanTarget[gvk]; ok {
				continue
			}
			r, _ := apimeta.UnsafeGuessKindToResource(gvk)
			if name, ok := resourceNameOverrides[gvk]; ok {
				r.Resource = name
			}
			api[apiKey(r, "")] = true
		}
	}
	for r, subs := range upstreamSubresources {
		if !api[apiKey(r, "")] {
			t.Errorf("upstreamSubresources names %s, which is not an upstream resource: fix the table", apiKey(r, ""))
		}
		for _, sub := range subs {
			api[apiKey(r, sub)] = true
		}
	}
	return api
}

// servedAPI returns every resource and subresource Myriad serves.
func servedAPI(t *testing.T) map[string]bool {
	t.Helper()
	reg, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	api := make(map[string]bool)
	for _, r := range reg.Resources() {
		api[apiKey(r.GroupVersionResource(), "")] = true
		for _, sub := range r.Subresources {
			api[apiKey(r.GroupVersionResource(), sub)] = true
		}
	}
	return api
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestCompleteness checks Myriad's API against kube-apiserver v1.34's.
func TestCompleteness(t *testing.T) {
	upstream := upstreamAPI(t)
	served := servedAPI(t)

	for _, k := range sortedKeys(upstream) {
		_, isExcluded := excluded[k]
		if !served[k] && !isExcluded {
			t.Errorf("%s: served by kube-apiserver v1.34 but neither by Myriad nor listed in excluded: serve it, or add it to excluded with its reason and issue", k)
		}
	}
	for _, k := range sortedKeys(served) {
		if !upstream[k] {
			t.Errorf("%s: served by Myriad but not by kube-apiserver v1.34: fix the resource or subresource name (or, if upstream does serve it, the upstream tables in this file)", k)
		}
	}
	excludedKeys := make([]string, 0, len(excluded))
	for k := range excluded {
		excludedKeys = append(excludedKeys, k)
	}
	sort.Strings(excludedKeys)
	for _, k := range excludedKeys {
		switch {
		case served[k]:
			t.Errorf("%s: listed in excluded (%s) but Myriad serves it now: delete the exclusion", k, excluded[k].issue)
		case !upstream[k]:
			t.Errorf("%s: listed in excluded but kube-apiserver v1.34 does not serve it: delete the exclusion or fix its name", k)
		case excluded[k].reason == "" || excluded[k].issue == "":
			t.Errorf("%s: exclusion without an issue and a reason", k)
		}
	}

	// Log the tally, so a run shows how far the API is.
	byIssue := make(map[string]int)
	for _, k := range excludedKeys {
		byIssue[excluded[k].issue]++
	}
	if testing.Verbose() {
		for _, k := range sortedKeys(upstream) {
			state := "served"
			if !served[k] {
				state = "excluded: " + excluded[k].issue
			}
			t.Logf("%-70s %s", k, state)
		}
	}
	t.Logf("kube-apiserver v1.34: %d resources and subresources; Myriad serves %d; excluded: %v", len(upstream), len(served), byIssue)
}
