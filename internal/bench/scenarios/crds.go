package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// CRDs is the `crds` scenario (issue 22's benchmarks): install many CRDs
// and time them to Established, then measure discovery and OpenAPI; fill
// one CRD with custom resources and the same number of ConfigMaps of the
// same size, and compare the server memory each costs and the latency of
// a LIST by an indexed label.
type CRDs struct {
	// CRDs installed, KindsPerGroup to a group. Default 1,000 and 10.
	CRDs, KindsPerGroup int
	// Objects of each kind (custom resource, ConfigMap). Default 100,000.
	Objects int
	// ObjectSize is the payload of each object in bytes. Default 2,048.
	ObjectSize int
	// Lists by label of each kind, each matching 1% of Objects.
	// Default 100.
	Lists int
	// Probes of each discovery and OpenAPI document. Default 50.
	Probes int
}

func (c *CRDs) defaults() {
	if c.CRDs <= 0 {
		c.CRDs = 1000
	}
	if c.KindsPerGroup <= 0 {
		c.KindsPerGroup = 10
	}
	if c.Objects < 0 {
		c.Objects = 0
	} else if c.Objects == 0 {
		c.Objects = 100000
	}
	if c.ObjectSize <= 0 {
		c.ObjectSize = 2048
	}
	if c.Lists <= 0 {
		c.Lists = 100
	}
	if c.Probes <= 0 {
		c.Probes = 50
	}
}

// labelShards is how many values the indexed label takes: a LIST by one
// matches 1% of the objects.
const labelShards = 100

// Run implements loadtest.Scenario.
func (c CRDs) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	r.Params["crds"] = itoa(c.CRDs)
	r.Params["kinds_per_group"] = itoa(c.KindsPerGroup)
	r.Params["objects"] = itoa(c.Objects)
	r.Params["object_size"] = itoa(c.ObjectSize)

	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	id := runID()
	crds := make([]*apiextensionsv1.CustomResourceDefinition, c.CRDs)
	for i := range crds {
		crds[i] = benchCRD(id, i/c.KindsPerGroup, i%c.KindsPerGroup)
	}
	defer c.deleteCRDs(ctx, env, ext, crds)

	if err := c.install(ctx, env, ext, crds); err != nil {
		return err
	}
	if err := c.probeDiscovery(ctx, env, crds); err != nil {
		return err
	}
	if c.Objects == 0 {
		return nil
	}
	namespaces, err := createNamespaces(ctx, env.Client, "bench-crds-"+id, 1)
	if err != nil {
		return err
	}
	ns := namespaces[0]
	defer cleanupNamespaces(ctx, env, namespaces)

	crd := crds[0]
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	payload := strings.Repeat("x", c.ObjectSize)
	custom := dyn.Resource(gvr).Namespace(ns)
	if err := c.fill(ctx, env, "custom resources", func(ctx context.Context, i int) error {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": crd.Spec.Names.Kind,
			"metadata": map[string]any{"name": fmt.Sprintf("cr-%d", i), "labels": map[string]any{"app": fmt.Sprintf("shard-%d", i%labelShards)}},
			"spec":     map[string]any{"replicas": int64(i % 5), "payload": payload},
		}}
		_, err := custom.Create(ctx, obj, metav1.CreateOptions{})
		return err
	}, "custom_resource"); err != nil {
		return err
	}
	cms := env.Client.CoreV1().ConfigMaps(ns)
	if err := c.fill(ctx, env, "config maps", func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Labels: map[string]string{"app": fmt.Sprintf("shard-%d", i%labelShards)}},
			Data: map[string]string{"payload": payload}}
		_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}, "configmap"); err != nil {
		return err
	}

	env.Progress.Phase("lists by label", int64(2*c.Lists), time.Time{}, nil)
	for i := range c.Lists {
		sel := metav1.ListOptions{LabelSelector: fmt.Sprintf("app=shard-%d", i%labelShards)}
		t := time.Now()
		_, err := custom.List(ctx, sel)
		env.Latency.Observe(key("LIST", "custom resources by label", "namespace"), time.Since(t), err)
		t = time.Now()
		_, err = cms.List(ctx, sel)
		env.Latency.Observe(key("LIST", "configmaps by label", "namespace"), time.Since(t), err)
		env.Progress.Add(2)
	}
	return nil
}

// install creates crds and records how long until every one is
// Established.
func (c CRDs) install(ctx context.Context, env *loadtest.Env, ext apiextensionsclient.Interface, crds []*apiextensionsv1.CustomResourceDefinition) error {
	env.Progress.Phase("install CRDs", int64(len(crds)), time.Time{}, nil)
	start := time.Now()
	if err := prefill(ctx, env, len(crds), func(ctx context.Context, i int) error {
		t := time.Now()
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crds[i], metav1.CreateOptions{})
		env.Latency.Observe(key("POST", "customresourcedefinitions", "cluster"), time.Since(t), err)
		return err
	}); err != nil {
		return err
	}
	created := time.Since(start)
	env.Progress.Phase("wait for Established", int64(len(crds)), time.Time{}, nil)
	selector := metav1.ListOptions{LabelSelector: "myriad-bench=" + crds[0].Labels["myriad-bench"]}
	reported := 0
	for {
		l, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, selector)
		if err != nil {
			return fmt.Errorf("listing CRDs: %w", err)
		}
		established := 0
		for i := range l.Items {
			for _, cond := range l.Items[i].Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established++
				}
			}
		}
		env.Progress.Add(int64(established - reported))
		reported = established
		if established == len(crds) {
			break
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	all := time.Since(start)
	env.Result.AddFigure("crds_created", "time to create every CRD", created.Seconds(), "s")
	env.Result.AddFigure("crds_established", "time from the first create to every CRD Established", all.Seconds(), "s")
	env.Result.AddVerdict("every CRD Established", fmt.Sprintf("%d", len(crds)), fmt.Sprintf("%d in %.1f s", len(crds), all.Seconds()), true)
	return nil
}

// probeDiscovery times the documents clients fetch after CRDs change:
// aggregated discovery, the legacy group list, the OpenAPI v3 index and
// one group version's OpenAPI v3 document.
func (c CRDs) probeDiscovery(ctx context.Context, env *loadtest.Env, crds []*apiextensionsv1.CustomResourceDefinition) error {
	rc := env.Client.Discovery().RESTClient()
	probes := []struct {
		name, path, accept string
	}{
		{"aggregated discovery /apis", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		{"legacy discovery /apis", "/apis", "application/json"},
		{"openapi v3 index", "/openapi/v3", "application/json"},
		{"openapi v2", "/openapi/v2", "application/json"},
	}
	env.Progress.Phase("discovery and openapi", int64(c.Probes*(len(probes)+1)), time.Time{}, nil)
	for _, p := range probes {
		for range c.Probes {
			t := time.Now()
			_, err := rc.Get().AbsPath(p.path).SetHeader("Accept", p.accept).DoRaw(ctx)
			env.Latency.Observe(key("GET", p.name, "cluster"), time.Since(t), err)
			env.Progress.Add(1)
		}
	}
	for range c.Probes {
		crd := crds[rand.IntN(len(crds))]
		t := time.Now()
		_, err := rc.Get().AbsPath("/openapi/v3/apis/"+crd.Spec.Group+"/v1").SetHeader("Accept", "application/json").DoRaw(ctx)
		env.Latency.Observe(key("GET", "openapi v3 of a CRD group", "cluster"), time.Since(t), err)
		env.Progress.Add(1)
	}
	return nil
}

// fill creates Objects objects with create and records the server heap
// they cost per object.
func (c CRDs) fill(ctx context.Context, env *loadtest.Env, what string, create func(ctx context.Context, i int) error, figure string) error {
	before, err := settledScrape(ctx, env)
	if err != nil {
		return err
	}
	env.Progress.Phase("create "+what, int64(c.Objects), time.Time{}, nil)
	start := time.Now()
	if err := prefill(ctx, env, c.Objects, create); err != nil {
		return err
	}
	took := time.Since(start)
	after, err := settledScrape(ctx, env)
	if err != nil {
		return err
	}
	n := float64(c.Objects)
	env.Result.AddFigure(figure+"_create_rate", what+" created per second", n/took.Seconds(), "/s")
	env.Result.AddFigure(figure+"_heap_per_object", "server heap in use per "+strings.TrimSuffix(what, "s"), (after.HeapInuseBytes-before.HeapInuseBytes)/n, "B")
	env.Result.AddFigure(figure+"_rss_per_object", "server RSS per "+strings.TrimSuffix(what, "s"), (after.RSSBytes-before.RSSBytes)/n, "B")
	return nil
}

// deleteCRDs deletes the run's CRDs (their custom resources go with them,
// by the cleanup finalizer). Best effort.
func (c CRDs) deleteCRDs(ctx context.Context, env *loadtest.Env, ext apiextensionsclient.Interface, crds []*apiextensionsv1.CustomResourceDefinition) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	env.Progress.Phase("delete CRDs", int64(len(crds)), time.Time{}, nil)
	_ = prefill(ctx, env, len(crds), func(ctx context.Context, i int) error {
		err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crds[i].Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			env.Log.Warn("deleting CRD", "name", crds[i].Name, "err", err)
		}
		return nil
	})
}

// benchCRD is kind k of group g: a namespaced CRD with a structural
// schema (so pruning and validation run on every write), status and scale
// subresources and a printer column, as operators' CRDs look.
func benchCRD(id string, g, k int) *apiextensionsv1.CustomResourceDefinition {
	group := fmt.Sprintf("g%d-%s.bench.myriad.io", g, id)
	kind := fmt.Sprintf("Thing%d", k)
	plural := fmt.Sprintf("things%d", k)
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: map[string]string{"myriad-bench": id}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer", Minimum: ptrTo(0.0)},
							"payload":  str,
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }
