package resources

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDiscover(t *testing.T) {
	client := fake.NewClientset()
	d := client.Discovery().(*fakediscovery.FakeDiscovery)
	all := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	d.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: all},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			{Name: "nodes", Kind: "Node", Verbs: all},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all}}},
		{GroupVersion: "apps/v1beta1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all}}},
	}
	got, err := Discover(d, "list", "delete")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.GVR.String())
	}
	want := []string{"/v1, Resource=pods", "/v1, Resource=nodes", "apps/v1, Resource=deployments"}
	if len(names) != len(want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("got %v, want %v", names, want)
		}
	}
	if !got[0].Namespaced || got[1].Namespaced {
		t.Fatal("namespaced flags wrong")
	}
}
