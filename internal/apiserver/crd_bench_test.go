package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The same requests as BenchmarkConfigMapGet and BenchmarkConfigMapCreate
// for a custom resource: unstructured objects, JSON storage, the schema's
// prune/default/validate and field managers of its own.

func BenchmarkCustomResourceGet(b *testing.B) {
	e := newEnv(b)
	e.installCRD(b, testCRD())
	benchServe(b, e.api, http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bench"},"spec":{"color":"red","replicas":1}}`), http.StatusCreated)
	// A consistent read first: the cache has the object from then on.
	benchServe(b, e.api, http.MethodGet, "/apis/example.com/v1/namespaces/default/widgets/bench", nil, http.StatusOK)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchServe(b, e.api, http.MethodGet, "/apis/example.com/v1/namespaces/default/widgets/bench?resourceVersion=0", nil, http.StatusOK)
	}
}

func BenchmarkCustomResourceCreate(b *testing.B) {
	e := newEnv(b)
	e.installCRD(b, testCRD())
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w-%d","labels":{"app":"bench"}},"spec":{"color":"red","replicas":1}}`, n.Add(1))
		benchServe(b, e.api, http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets", []byte(body), http.StatusCreated)
	}
}

// BenchmarkCRDInstall creates b.N CRDs (one group each) and waits for all
// to be Established: the per-CRD cost of the controller, the caches and
// the rebuilt discovery and OpenAPI documents.
func BenchmarkCRDInstall(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(e.cfg)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		crd := testCRD()
		group := fmt.Sprintf("g%d.example.com", i)
		crd.Name, crd.Spec.Group = "widgets."+group, group
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, 10*time.Minute, "all established", func() bool {
		list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range list.Items {
			if crdCondition(&list.Items[i], apiextensionsv1.Established) != apiextensionsv1.ConditionTrue {
				return false
			}
		}
		return len(list.Items) == b.N
	})
	b.StopTimer()
	start := time.Now()
	benchServe(b, e.api, http.MethodGet, "/apis", nil, http.StatusOK)
	b.ReportMetric(float64(time.Since(start).Microseconds()), "µs/discovery")
}
