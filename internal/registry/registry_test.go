package registry

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fixedNow is the clock every test registry uses.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestRegistry(t *testing.T) *Registry {
	t.Helper()
	reg, err := NewWithOptions(Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func mustLookup(t *testing.T, reg *Registry, group, resource string) *Resource {
	t.Helper()
	r, ok := reg.Lookup(schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource})
	if !ok {
		t.Fatalf("%s/%s not registered", group, resource)
	}
	return r
}

func TestRegistryConsistentWithScheme(t *testing.T) {
	reg := newTestRegistry(t)
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.Resources() {
		gvks, _, err := scheme.ObjectKinds(r.New())
		if err != nil || len(gvks) == 0 || gvks[0] != r.GroupVersionKind() {
			t.Errorf("%v: New() kinds %v, %v; want %v", r.GroupVersionResource(), gvks, err, r.GroupVersionKind())
		}
		if r.NewList == nil {
			if slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "watch") {
				t.Errorf("%v: lists without NewList", r.GroupVersionResource())
			}
		} else if lk, _, err := scheme.ObjectKinds(r.NewList()); err != nil || lk[0].Kind != r.Kind+"List" {
			t.Errorf("%v: NewList() kinds %v, %v", r.GroupVersionResource(), lk, err)
		}
		if got, ok := reg.LookupResource(r.GroupVersion, r.Resource); !ok || got != r {
			t.Errorf("LookupResource(%v, %q) = %v, %v", r.GroupVersion, r.Resource, got, ok)
		}
		if got, ok := reg.LookupKind(r.GroupVersionKind()); !ok || got != r {
			t.Errorf("LookupKind(%v) = %v, %v", r.GroupVersionKind(), got, ok)
		}
		// Every row lines up with the columns, even for an empty object.
		if cells, cols := r.Table.Cells(r.New()), r.Table.Columns(); len(cells) != len(cols) {
			t.Errorf("%v: %d cells for %d columns", r.GroupVersionResource(), len(cells), len(cols))
		}
		_ = r.SelectableFields(r.New())
	}
}

func TestDiscovery(t *testing.T) {
	reg := newTestRegistry(t)
	type want struct {
		namespaced bool
		short      string
		categories string
		subres     string
		collection bool
	}
	cases := map[string]want{
		"/namespaces":                {false, "ns", "", "status,finalize", false},
		"/nodes":                     {false, "no", "", "status,proxy", true},
		"/pods":                      {true, "po", "all", "status,binding,eviction,ephemeralcontainers,resize,attach,exec,log,portforward,proxy", true},
		"/podtemplates":              {true, "", "", "", true},
		"/replicationcontrollers":    {true, "rc", "all", "status,scale", true},
		"/componentstatuses":         {false, "cs", "", "", false},
		"/bindings":                  {true, "", "", "", false},
		"/services":                  {true, "svc", "all", "status,proxy", true},
		"/endpoints":                 {true, "ep", "", "", true},
		"/configmaps":                {true, "cm", "", "", true},
		"/secrets":                   {true, "", "", "", true},
		"/serviceaccounts":           {true, "sa", "", "token", true},
		"/events":                    {true, "ev", "", "", true},
		"/limitranges":               {true, "limits", "", "", true},
		"/resourcequotas":            {true, "quota", "", "status", true},
		"/persistentvolumes":         {false, "pv", "", "status", true},
		"/persistentvolumeclaims":    {true, "pvc", "", "status", true},
		"coordination.k8s.io/leases": {true, "", "", "", true},
		"apps/deployments":           {true, "deploy", "all", "status,scale", true},
		"apps/replicasets":           {true, "rs", "all", "status,scale", true},
		"apps/statefulsets":          {true, "sts", "all", "status,scale", true},
		"apps/daemonsets":            {true, "ds", "all", "status", true},
		"apps/controllerrevisions":   {true, "", "", "", true},
		"certificates.k8s.io/certificatesigningrequests": {false, "csr", "", "approval,status", true},
		"batch/jobs":                               {true, "", "all", "status", true},
		"batch/cronjobs":                           {true, "cj", "all", "status", true},
		"discovery.k8s.io/endpointslices":          {true, "", "", "", true},
		"events.k8s.io/events":                     {true, "ev", "", "", true},
		"flowcontrol.apiserver.k8s.io/flowschemas": {false, "", "", "status", true},
		"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations":       {false, "", "", "status", true},
		"scheduling.k8s.io/priorityclasses":                              {false, "pc", "", "", true},
		"policy/poddisruptionbudgets":                                    {true, "pdb", "", "status", true},
		"rbac.authorization.k8s.io/roles":                                {true, "", "", "", true},
		"rbac.authorization.k8s.io/rolebindings":                         {true, "", "", "", true},
		"rbac.authorization.k8s.io/clusterroles":                         {false, "", "", "", true},
		"rbac.authorization.k8s.io/clusterrolebindings":                  {false, "", "", "", true},
		"networking.k8s.io/ingresses":                                    {true, "ing", "", "status", true},
		"networking.k8s.io/ingressclasses":                               {false, "", "", "", true},
		"networking.k8s.io/networkpolicies":                              {true, "netpol", "", "", true},
		"node.k8s.io/runtimeclasses":                                     {false, "", "", "", true},
		"storage.k8s.io/storageclasses":                                  {false, "sc", "", "", true},
		"storage.k8s.io/csidrivers":                                      {false, "", "", "", true},
		"storage.k8s.io/csinodes":                                        {false, "", "", "", true},
		"storage.k8s.io/volumeattachments":                               {false, "", "", "status", true},
		"storage.k8s.io/csistoragecapacities":                            {true, "", "", "", true},
		"storage.k8s.io/volumeattributesclasses":                         {false, "vac", "", "", true},
		"autoscaling/horizontalpodautoscalers":                           {true, "hpa", "all", "status", true},
		"authentication.k8s.io/tokenreviews":                             {false, "", "", "", false},
		"authentication.k8s.io/selfsubjectreviews":                       {false, "", "", "", false},
		"authorization.k8s.io/subjectaccessreviews":                      {false, "", "", "", false},
		"authorization.k8s.io/selfsubjectaccessreviews":                  {false, "", "", "", false},
		"authorization.k8s.io/selfsubjectrulesreviews":                   {false, "", "", "", false},
		"authorization.k8s.io/localsubjectaccessreviews":                 {true, "", "", "", false},
		"admissionregistration.k8s.io/mutatingwebhookconfigurations":     {false, "", "api-extensions", "", true},
		"admissionregistration.k8s.io/validatingwebhookconfigurations":   {false, "", "api-extensions", "", true},
		"admissionregistration.k8s.io/validatingadmissionpolicies":       {false, "", "api-extensions", "status", true},
		"admissionregistration.k8s.io/validatingadmissionpolicybindings": {false, "", "api-extensions", "", true},
		"apiregistration.k8s.io/apiservices":                             {false, "", "api-extensions", "status", true},
		"apiextensions.k8s.io/customresourcedefinitions":                 {false, "crd,crds", "api-extensions", "status", true},
	}
	// autoscaling is served in v2 as well as v1.
	if n := len(reg.Resources()); n != len(cases)+1 {
		t.Errorf("%d resources, want %d", n, len(cases)+1)
	}
	for key, w := range cases {
		group, res, _ := strings.Cut(key, "/")
		r := mustLookup(t, reg, group, res)
		hasCollection := false
		for _, v := range r.Verbs {
			hasCollection = hasCollection || v == "deletecollection"
		}
		got := want{r.Namespaced, strings.Join(r.ShortNames, ","), strings.Join(r.Categories, ","), strings.Join(r.Subresources, ","), hasCollection}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", key, got, w)
		}
		// Stored under the storage version's group (events.k8s.io events
		// are core's).
		g := reg.StorageResource(r).GroupVersion.Group
		if g == "" {
			g = "core"
		}
		if r.StorageKeyPrefix != "/"+g+"/"+res {
			t.Errorf("%s: storage prefix %q", key, r.StorageKeyPrefix)
		}
	}
	// Order is stable between registries.
	a, b := newTestRegistry(t).Resources(), reg.Resources()
	for i := range a {
		if a[i].GroupVersionResource() != b[i].GroupVersionResource() {
			t.Fatalf("order differs at %d", i)
		}
	}
	// One group version per group the cases name, two for autoscaling.
	groups := map[string]bool{}
	for key := range cases {
		g, _, _ := strings.Cut(key, "/")
		groups[g] = true
	}
	if gvs := reg.GroupVersions(); len(gvs) != len(groups)+1 || gvs[0] != (schema.GroupVersion{Version: "v1"}) {
		t.Errorf("GroupVersions() = %v", gvs)
	}
}
