package apiserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAggregatedDiscovery: the apidiscovery.k8s.io/v2 documents kubectl and
// client-go ask for first carry every resource with its verbs, scope, short
// names, categories and subresources.
func TestAggregatedDiscovery(t *testing.T) {
	e := newEnv(t)
	find := func(path, group, version, resource string) apidiscoveryv2.APIResourceDiscovery {
		t.Helper()
		resp := e.do("GET", path, nil, "Accept: "+aggregatedDiscoveryType+",application/json")
		if resp.code != 200 || !strings.Contains(resp.header.Get("Content-Type"), "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") {
			t.Fatalf("GET %s: %d %q", path, resp.code, resp.header.Get("Content-Type"))
		}
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(resp.body, &list); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		for _, g := range list.Items {
			if g.Name != group {
				continue
			}
			for _, v := range g.Versions {
				if v.Version != version {
					continue
				}
				for _, r := range v.Resources {
					if r.Resource == resource {
						return r
					}
				}
			}
		}
		t.Fatalf("GET %s: no %s/%s %s", path, group, version, resource)
		return apidiscoveryv2.APIResourceDiscovery{}
	}
	subresources := func(r apidiscoveryv2.APIResourceDiscovery) []string {
		var out []string
		for _, s := range r.Subresources {
			out = append(out, s.Subresource)
		}
		return out
	}

	pods := find("/api", "", "v1", "pods")
	if pods.Scope != apidiscoveryv2.ScopeNamespace || !slices.Contains(pods.ShortNames, "po") || !slices.Contains(pods.Categories, "all") ||
		!slices.Contains(pods.Verbs, "watch") || !slices.Contains(pods.Verbs, "deletecollection") {
		t.Fatalf("pods: %+v", pods)
	}
	for _, sub := range []string{"status", "binding", "eviction"} {
		if !slices.Contains(subresources(pods), sub) {
			t.Fatalf("pods subresources %v lack %s", subresources(pods), sub)
		}
	}
	deploy := find("/apis", "apps", "v1", "deployments")
	if !slices.Contains(deploy.ShortNames, "deploy") || deploy.ResponseKind == nil || deploy.ResponseKind.Kind != "Deployment" ||
		!slices.Contains(subresources(deploy), "scale") {
		t.Fatalf("deployments: %+v", deploy)
	}
	if nodes := find("/api", "", "v1", "nodes"); nodes.Scope != apidiscoveryv2.ScopeCluster {
		t.Fatalf("nodes scope %q", nodes.Scope)
	}
	find("/apis", "coordination.k8s.io", "v1", "leases")
}

// TestLegacyDiscoveryScaleKind: the per-version resource list names the
// scale subresource's kind with its group and version, autoscaling/v1, as
// upstream: client-go's scale client (the HPA controller's) decodes by it.
func TestLegacyDiscoveryScaleKind(t *testing.T) {
	e := newEnv(t)
	resp := e.do("GET", "/apis/apps/v1", nil, "Accept: application/json")
	if resp.code != 200 {
		t.Fatalf("GET /apis/apps/v1: %d", resp.code)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(resp.body, &list); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range list.APIResources {
		switch r.Name {
		case "deployments/scale", "replicasets/scale", "statefulsets/scale":
			found++
			if r.Group != "autoscaling" || r.Version != "v1" || r.Kind != "Scale" {
				t.Errorf("%s: %s/%s %s, want autoscaling/v1 Scale", r.Name, r.Group, r.Version, r.Kind)
			}
		case "deployments/status":
			if r.Group != "" || r.Version != "" || r.Kind != "Deployment" {
				t.Errorf("%s: %s/%s %s, want the resource's own kind", r.Name, r.Group, r.Version, r.Kind)
			}
		}
	}
	if found != 3 {
		t.Errorf("%d scale subresources listed, want 3", found)
	}
}

// TestDiscoveryCrossGroupSubresources: pods/eviction and
// serviceaccounts/token name their kinds' groups, as upstream, in both
// discovery documents. kubectl drain evicts only when pods/eviction says
// policy/v1 Eviction; otherwise it deletes the pods, past their
// PodDisruptionBudgets.
func TestDiscoveryCrossGroupSubresources(t *testing.T) {
	e := newEnv(t)
	want := map[string]metav1.GroupVersionKind{
		"pods/eviction":            {Group: "policy", Version: "v1", Kind: "Eviction"},
		"serviceaccounts/token":    {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
		"pods/binding":             {Kind: "Binding"},
		"pods/ephemeralcontainers": {Kind: "Pod"},
		"pods/resize":              {Kind: "Pod"},
	}
	resp := e.do("GET", "/api/v1", nil, "Accept: application/json")
	var list metav1.APIResourceList
	if err := json.Unmarshal(resp.body, &list); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range list.APIResources {
		if w, ok := want[r.Name]; ok {
			seen++
			if got := (metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}); got != w {
				t.Errorf("/api/v1 %s: %+v, want %+v", r.Name, got, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("/api/v1 listed %d of %d subresources", seen, len(want))
	}

	resp = e.do("GET", "/api", nil, "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(resp.body, &agg); err != nil {
		t.Fatal(err)
	}
	seen = 0
	for _, g := range agg.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				for _, sub := range r.Subresources {
					w, ok := want[r.Resource+"/"+sub.Subresource]
					if !ok {
						continue
					}
					seen++
					if w.Version == "" {
						w.Version = "v1"
					}
					if sub.ResponseKind == nil || *sub.ResponseKind != w {
						t.Errorf("aggregated %s/%s: %+v, want %+v", r.Resource, sub.Subresource, sub.ResponseKind, w)
					}
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("aggregated discovery listed %d of %d subresources", seen, len(want))
	}
}
