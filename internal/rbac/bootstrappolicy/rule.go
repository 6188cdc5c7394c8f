package bootstrappolicy

import (
	"fmt"
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The policy is static data written as code, the way upstream writes it,
// so that a diff against upstream's source reads line for line. The
// builders below sort every list as upstream's rbacv1helpers do; the
// golden files depend on that order.

// Verb sets upstream's policy names (bootstrappolicy.Read, Write, ...).
// Functions, not variables: every rule gets its own slice to sort.
func readVerbs() []string { return []string{"get", "list", "watch"} }
func writeVerbs() []string {
	return []string{"create", "update", "patch", "delete", "deletecollection"}
}
func readWriteVerbs() []string  { return append(readVerbs(), writeVerbs()...) }
func readUpdateVerbs() []string { return []string{"get", "list", "watch", "update", "patch"} }

// Label and annotation every bootstrap object carries: the label marks
// it as a default, the annotation lets Reconcile keep it current.
const (
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	bootstrappingValue = "rbac-defaults"
)

// API groups the rules name.
const (
	legacyGroup                = ""
	appsGroup                  = "apps"
	authenticationGroup        = "authentication.k8s.io"
	authorizationGroup         = "authorization.k8s.io"
	autoscalingGroup           = "autoscaling"
	batchGroup                 = "batch"
	certificatesGroup          = "certificates.k8s.io"
	coordinationGroup          = "coordination.k8s.io"
	discoveryGroup             = "discovery.k8s.io"
	extensionsGroup            = "extensions"
	policyGroup                = "policy"
	rbacGroup                  = "rbac.authorization.k8s.io"
	resourceGroup              = "resource.k8s.io"
	storageGroup               = "storage.k8s.io"
	nodeGroup                  = "node.k8s.io"
	resMetricsGroup            = "metrics.k8s.io"
	customMetricsGroup         = "custom.metrics.k8s.io"
	externalMetricsGroup       = "external.metrics.k8s.io"
	networkingGroup            = "networking.k8s.io"
	eventsGroup                = "events.k8s.io"
	admissionRegistrationGroup = "admissionregistration.k8s.io"
)

// ruleBuilder builds one PolicyRule (upstream's PolicyRuleBuilder).
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: slices.Clone(verbs)}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

func (b *ruleBuilder) resources(r ...string) *ruleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

func (b *ruleBuilder) names(n ...string) *ruleBuilder {
	b.r.ResourceNames = append(b.r.ResourceNames, n...)
	return b
}

func (b *ruleBuilder) urls(u ...string) *ruleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

// build checks the rule's shape and sorts its lists. A malformed rule is a
// bug in this package's static data, caught by every test that builds the
// policy, so it panics rather than burden every caller with an error.
func (b *ruleBuilder) build() rbacv1.PolicyRule {
	r := b.r
	switch {
	case len(r.Verbs) == 0:
		panic(fmt.Sprintf("bootstrappolicy: rule without verbs: %#v", r))
	case len(r.NonResourceURLs) > 0:
		if len(r.APIGroups) != 0 || len(r.Resources) != 0 || len(r.ResourceNames) != 0 {
			panic(fmt.Sprintf("bootstrappolicy: non-resource rule with apiGroups, resources or resourceNames: %#v", r))
		}
	case len(r.Resources) > 0:
		if len(r.APIGroups) == 0 {
			panic(fmt.Sprintf("bootstrappolicy: resource rule without apiGroups: %#v", r))
		}
	default:
		panic(fmt.Sprintf("bootstrappolicy: rule with neither resources nor nonResourceURLs: %#v", r))
	}
	sort.Strings(r.Resources)
	sort.Strings(r.ResourceNames)
	sort.Strings(r.APIGroups)
	sort.Strings(r.NonResourceURLs)
	sort.Strings(r.Verbs)
	return r
}

// eventsRule lets a component record events in both event APIs.
func eventsRule() rbacv1.PolicyRule {
	return rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").build()
}

// Subjects.
func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

func saSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterBinding binds the ClusterRole of the same name to subjects.
func clusterBinding(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	if len(subjects) == 0 {
		panic("bootstrappolicy: binding " + role + " without subjects")
	}
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// roleBinding binds the Role of the same name in namespace to subjects.
func roleBinding(role, namespace string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	if len(subjects) == 0 {
		panic("bootstrappolicy: binding " + role + " without subjects")
	}
	return rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}

// defaultMetadata adds the bootstrapping label and the autoupdate
// annotation, keeping the object's own labels.
func defaultMetadata(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[bootstrappingLabel] = bootstrappingValue
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[rbacv1.AutoUpdateAnnotationKey] = "true"
}
