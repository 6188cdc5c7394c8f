package apiserver

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestCachedObjectsNeverMutated serves one cached object in every shape
// (each format, Table, metadata, list, watch, writes that start from it)
// and checks the cache's shared copy is byte-for-byte what it was.
func TestCachedObjectsNeverMutated(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pod := testPod("shared", "node-1")
	pod.Annotations = map[string]string{"a": "b"}
	created, err := e.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := e.api.handlers[schema.GroupVersionResource{Version: "v1", Resource: "pods"}]
	cached, err := h.cache.Get(ctx, h.objects.key("default", "shared"), created.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	before := cached.DeepCopyObject()

	const p = "/api/v1/namespaces/default/pods"
	for _, accept := range []string{"", "application/yaml", protoType, tableAccept, metadataAccept, metaListAccept,
		"application/json;as=Table;v=v1;g=meta.k8s.io", protoType + ";as=Table;v=v1;g=meta.k8s.io"} {
		e.do("GET", p+"/shared", nil, "Accept: "+accept)
		e.do("GET", p, nil, "Accept: "+accept)
		e.do("GET", p+"?limit=1", nil, "Accept: "+accept)
		e.do("GET", p+"?pretty=true", nil, "Accept: "+accept)
		e.do("GET", p+"?includeObject=Object", nil, "Accept: "+accept)
	}
	for _, accept := range []string{"application/json", protoType, tableAccept, metadataAccept} {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rc := e.rawStream(wctx, p+"?watch=true&resourceVersion=0&timeoutSeconds=1", accept)
		buf := make([]byte, 512)
		_, _ = rc.Read(buf)
		rc.Close()
		cancel()
	}
	// Writes read the store, not the cache, but answer in every shape too.
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Patch(ctx, "shared", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(before, cached) {
		t.Fatalf("a cached object was mutated while served:\nbefore %+v\nafter  %+v", before, cached)
	}
	if gvk := cached.GetObjectKind().GroupVersionKind(); gvk != corev1.SchemeGroupVersion.WithKind("Pod") {
		t.Fatalf("cached object lost its TypeMeta: %v", gvk)
	}
}
