package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestDefaultRBACPolicy checks upstream's default policy through kubectl:
// the defaults exist after `myriad up`, admin/edit/view carry aggregated
// rules and pick up a new role labelled for aggregation within seconds,
// and a restart restores a rule deleted from cluster-admin while leaving
// a role marked autoupdate=false as the user changed it.
func TestDefaultRBACPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own server")
	}
	s, err := startServer(filepath.Join(t.TempDir(), "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.stop() }()

	names := strings.Fields(s.mustKubectl(t, "", "get", "clusterroles", "-o", "name"))
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:node", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:kube-scheduler", "system:kube-controller-manager", "system:aggregate-to-view",
		"system:controller:clusterrole-aggregation-controller", "system:controller:replicaset-controller"} {
		if !slices.Contains(names, "clusterrole.rbac.authorization.k8s.io/"+want) {
			t.Errorf("kubectl get clusterroles lacks %s", want)
		}
	}
	bindings := s.mustKubectl(t, "", "get", "clusterrolebindings", "cluster-admin", "-o", "jsonpath={.subjects[0].name}")
	if bindings != "system:masters" {
		t.Errorf("cluster-admin is bound to %q, want system:masters", bindings)
	}
	s.mustKubectl(t, "", "get", "rolebinding", "-n", "kube-system", "system::leader-locking-kube-scheduler")

	// The aggregation controller fills admin, edit and view.
	waitFor(t, 30*time.Second, func() bool {
		return allows(clusterRole(t, s, "view"), "get", "", "pods") &&
			allows(clusterRole(t, s, "edit"), "create", "", "pods") &&
			allows(clusterRole(t, s, "admin"), "create", "rbac.authorization.k8s.io", "rolebindings")
	})
	if allows(clusterRole(t, s, "view"), "get", "", "secrets") {
		t.Error("view can read secrets")
	}

	// A role labelled aggregate-to-view joins view.
	s.mustKubectl(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-viewer
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: ["example.com"]
  resources: ["widgets"]
  verbs: ["get", "list"]
`, "apply", "-f", "-")
	start := time.Now()
	waitFor(t, 10*time.Second, func() bool { return allows(clusterRole(t, s, "view"), "list", "example.com", "widgets") })
	t.Logf("widget-viewer aggregated into view after %v", time.Since(start).Round(time.Millisecond))
	// edit aggregates view and admin edit: the rule reaches both.
	waitFor(t, 10*time.Second, func() bool { return allows(clusterRole(t, s, "admin"), "list", "example.com", "widgets") })

	// A user deletes cluster-admin's non-resource rule, and changes
	// system:basic-user after opting it out of reconciliation.
	admin := clusterRole(t, s, "cluster-admin")
	admin.Rules = admin.Rules[:1]
	if len(admin.Rules[0].NonResourceURLs) > 0 {
		t.Fatalf("cluster-admin's first rule is not its resource rule: %v", admin.Rules)
	}
	replace(t, s, admin)
	s.mustKubectl(t, "", "annotate", "--overwrite", "clusterrole", "system:basic-user", "rbac.authorization.kubernetes.io/autoupdate=false")
	s.mustKubectl(t, "", "patch", "clusterrole", "system:basic-user", "--type=json", "-p", `[{"op":"remove","path":"/rules/1"}]`)
	if n := len(clusterRole(t, s, "cluster-admin").Rules); n != 1 {
		t.Fatalf("cluster-admin has %d rules after the user's change", n)
	}

	logReconciliation(t, s)
	if err := s.stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	s, err = startServerOnPort(s.dataDir, s.port)
	if err != nil {
		t.Fatal(err)
	}
	if got := clusterRole(t, s, "cluster-admin").Rules; len(got) != 2 || !slices.Equal(got[1].NonResourceURLs, []string{"*"}) {
		t.Errorf("cluster-admin after restart: %v, want its non-resource rule restored", got)
	}
	if got := clusterRole(t, s, "system:basic-user").Rules; len(got) != 1 {
		t.Errorf("system:basic-user (autoupdate=false) after restart: %v, want the user's single rule", got)
	}
	// The user's aggregated role survives too, and view still has it.
	if !allows(clusterRole(t, s, "view"), "list", "example.com", "widgets") {
		t.Error("view lost widget-viewer's rule over the restart")
	}
	logReconciliation(t, s)
}

// logReconciliation logs the server's report of its start's reconciliation
// (what it wrote and how long it took).
func logReconciliation(t *testing.T, s *server) {
	for _, line := range regexp.MustCompile(`(?m)^.*default RBAC policy reconciled.*$`).FindAllString(s.log.String(), -1) {
		t.Log(line)
	}
}

func clusterRole(t *testing.T, s *server, name string) *rbacv1.ClusterRole {
	t.Helper()
	var cr rbacv1.ClusterRole
	if err := json.Unmarshal([]byte(s.mustKubectl(t, "", "get", "clusterrole", name, "-o", "json")), &cr); err != nil {
		t.Fatalf("decoding clusterrole %s: %v", name, err)
	}
	return &cr
}

func replace(t *testing.T, s *server, cr *rbacv1.ClusterRole) {
	t.Helper()
	data, err := json.Marshal(cr)
	if err != nil {
		t.Fatal(err)
	}
	s.mustKubectl(t, string(data), "replace", "-f", "-")
}

// allows reports whether one of role's rules grants verb on group/resource
// (no wildcards beyond "*" itself; enough for the default roles).
func allows(role *rbacv1.ClusterRole, verb, group, resource string) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range role.Rules {
		if has(r.Verbs, verb) && has(r.APIGroups, group) && has(r.Resources, resource) {
			return true
		}
	}
	return false
}
