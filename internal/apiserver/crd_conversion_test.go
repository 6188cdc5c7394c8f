package apiserver

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// conversionWebhook converts Widgets between example.com/v1, whose
// spec.color is a string, and example.com/v2, whose spec.paint is
// {"color": ...}: a real HTTPS webhook answering ConversionReview v1.
func conversionWebhook(t *testing.T, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			switch review.Request.DesiredAPIVersion {
			case "example.com/v2":
				if c, ok, _ := unstructured.NestedString(u.Object, "spec", "color"); ok {
					unstructured.RemoveNestedField(u.Object, "spec", "color")
					_ = unstructured.SetNestedField(u.Object, c, "spec", "paint", "color")
				}
			case "example.com/v1":
				if c, ok, _ := unstructured.NestedString(u.Object, "spec", "paint", "color"); ok {
					unstructured.RemoveNestedField(u.Object, "spec", "paint")
					_ = unstructured.SetNestedField(u.Object, c, "spec", "color")
				}
			}
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Object: u})
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCRDConversionWebhook: a CRD serving v1 (stored) and v2 with Webhook
// conversion; objects written in either version are stored in v1 and read
// back in the other through the webhook, in GET, LIST and WATCH.
func TestCRDConversionWebhook(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	hook := conversionWebhook(t, &calls)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	url := hook.URL + "/convert"

	crd := testCRD()
	v2 := crd.Spec.Versions[0].DeepCopy()
	v2.Name, v2.Storage = "v2", false
	v2.Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer"}, "selector": {Type: "string"},
		"paint": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"color": {Type: "string"}}},
	}}
	v2.AdditionalPrinterColumns = nil
	crd.Spec.Versions = append(crd.Spec.Versions[:1], *v2)
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
		},
	}
	e.installCRD(t, crd)

	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(e.cfg)
	widgetsV2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	v1c, v2c := dyn.Resource(widgetsV1).Namespace("default"), dyn.Resource(widgetsV2).Namespace("default")

	w, err := v2c.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if _, err := v1c.Create(ctx, widget("old", "red", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in v1: %v", err)
	}
	got, err := v2c.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get in v2: %v", err)
	}
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "paint", "color"); c != "red" || got.GetAPIVersion() != "example.com/v2" {
		t.Fatalf("v2 of a v1 write: %v", got.Object)
	}

	fresh := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v2", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "new"},
		"spec":     map[string]interface{}{"paint": map[string]interface{}{"color": "blue"}, "replicas": int64(2)},
	}}
	if _, err := v2c.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in v2: %v", err)
	}
	back, err := v1c.Get(ctx, "new", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(back.Object, "spec", "color"); c != "blue" {
		t.Fatalf("v1 of a v2 write: %v", back.Object)
	}
	// Stored in the storage version, v1.
	raw, err := e.store.Get(ctx, "/example.com/widgets/default/new")
	if err != nil {
		t.Fatalf("reading the stored object: %v", err)
	}
	if !strings.Contains(string(raw.Value), `"apiVersion":"example.com/v1"`) || !strings.Contains(string(raw.Value), `"color":"blue"`) {
		t.Fatalf("stored: %s", raw.Value)
	}

	l, err := v2c.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 2 {
		t.Fatalf("list in v2: %v, %v", l, err)
	}
	for _, it := range l.Items {
		if _, ok, _ := unstructured.NestedString(it.Object, "spec", "paint", "color"); !ok {
			t.Errorf("listed in v2 without spec.paint: %v", it.Object)
		}
	}
	for range 2 {
		ev := <-w.ResultChan()
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || u.GetAPIVersion() != "example.com/v2" {
			t.Fatalf("watch event in v2: %v", ev.Object)
		}
		if _, ok, _ := unstructured.NestedString(u.Object, "spec", "paint", "color"); !ok {
			t.Errorf("watched in v2 without spec.paint: %v", u.Object)
		}
	}
	if calls.Load() == 0 {
		t.Fatal("the webhook was never called")
	}
}

// TestCRDWarnings: a CRD using a format the server does not know is
// accepted with upstream's warning, and every request to a deprecated
// version carries its deprecation warning, reads included.
func TestCRDWarnings(t *testing.T) {
	e := newEnv(t)
	crd := testCRD()
	color := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"]
	color.Format = "colour-name"
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"] = color
	crd.Spec.Versions[1].Deprecated = true
	body, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	r := e.do(http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body, "Content-Type: application/json")
	if r.code != http.StatusCreated || !strings.Contains(strings.Join(r.header.Values("Warning"), "\n"), `unrecognized format \"colour-name\"`) {
		t.Fatalf("create: %d, warnings %q\n%s", r.code, r.header.Values("Warning"), r.body)
	}
	waitFor(t, 10*time.Second, "v1beta1 served", func() bool {
		return e.do(http.MethodGet, "/apis/example.com/v1beta1/namespaces/default/widgets", nil).code == http.StatusOK
	})
	r = e.do(http.MethodGet, "/apis/example.com/v1beta1/namespaces/default/widgets", nil)
	if w := r.header.Values("Warning"); len(w) != 1 || !strings.Contains(w[0], "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget") {
		t.Errorf("deprecated version's warnings: %q", w)
	}
	if w := e.do(http.MethodGet, "/apis/example.com/v1/namespaces/default/widgets", nil).header.Values("Warning"); len(w) != 0 {
		t.Errorf("current version's warnings: %q", w)
	}
}
