package etcd

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

// upstreamValue encodes obj as kube-apiserver stores it: "k8s\x00" and a
// runtime.Unknown holding the v1 protobuf.
func upstreamValue(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := protobuf.NewSerializer(scheme, scheme)
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	if err := enc.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUpstreamLayoutThroughAPIServer: objects written into etcd the way
// kube-apiserver writes them (its keys, its protobuf) are served by a
// Myriad API server over this store, and objects created through Myriad
// land under upstream's keys.
func TestUpstreamLayoutThroughAPIServer(t *testing.T) {
	c := etcdtest.Start(t, 1)
	raw := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	seed := map[string]runtime.Object{
		"/registry/namespaces/default": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "ns-uid"}},
		"/registry/minions/node-1":     &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}},
		"/registry/pods/default/web-1": &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "pod-uid", CreationTimestamp: metav1.Now()},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		},
		"/registry/configmaps/default/old": &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "default", UID: "cm-uid"},
			Data:       map[string]string{"from": "upstream"},
		},
		"/registry/services/specs/default/web": &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid"},
			Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.10", ClusterIPs: []string{"10.0.0.10"}, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}, Type: corev1.ServiceTypeClusterIP},
		},
	}
	for key, obj := range seed {
		if _, err := raw.Put(ctx, key, string(upstreamValue(t, obj))); err != nil {
			t.Fatalf("seeding %s: %v", key, err)
		}
	}

	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	for _, r := range reg.Resources() {
		prefixes = append(prefixes, r.StorageKeyPrefix)
	}
	layout, err := UpstreamKeyLayout(prefixes)
	if err != nil {
		t.Fatalf("UpstreamKeyLayout(registry): %v", err)
	}
	st := newTestStore(t, c, Config{Prefix: "/registry", KeyLayout: layout})

	// A watch on Myriad's pod prefix sees upstream's pod keys, translated.
	w, err := st.Watch(ctx, "/core/pods/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	put, err := raw.Put(ctx, "/registry/pods/default/web-2", string(upstreamValue(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "default"}})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Put(ctx, "/registry/minions/node-2", string(upstreamValue(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}))); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w, 10*time.Second); ev.Key != "/core/pods/default/web-2" || ev.Revision != put.Header.Revision {
		t.Fatalf("watch event %v %q@%d, want /core/pods/default/web-2@%d", ev.Type, ev.Key, ev.Revision, put.Header.Revision)
	}
	if _, err := raw.Delete(ctx, "/registry/pods/default/web-2"); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w, 10*time.Second); ev.Type != storage.EventDelete || ev.Key != "/core/pods/default/web-2" {
		t.Fatalf("watch event %v %q, want the delete of web-2", ev.Type, ev.Key)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api, err := apiserver.New(apiserver.Config{Store: st, Registry: reg, Logger: quiet})
	if err != nil {
		t.Fatalf("apiserver.New: %v", err)
	}
	if err := api.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(api.Stop)
	for !api.Ready() {
		if ctx.Err() != nil {
			t.Fatal("API server not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: -1})

	pod, err := cs.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get upstream pod: %v", err)
	}
	if pod.UID != "pod-uid" || pod.Spec.NodeName != "node-1" || pod.ResourceVersion == "" {
		t.Fatalf("pod = uid %q node %q rv %q", pod.UID, pod.Spec.NodeName, pod.ResourceVersion)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil || node.UID != "node-uid" {
		t.Fatalf("get upstream node (stored as a minion): %v %v", node, err)
	}
	svc, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "10.0.0.10" {
		t.Fatalf("get upstream service (services/specs): %v %v", svc, err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("list pods: %v items, %v", len(pods.Items), err)
	}

	// Written through Myriad: stored where kube-apiserver would look.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "old", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch upstream configmap: %v", err)
	}
	for _, key := range []string{"/registry/configmaps/default/cm", "/registry/configmaps/default/old"} {
		resp, err := raw.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw get %s: %v, %d kvs", key, err, len(resp.Kvs))
		}
		if !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s\x00")) {
			t.Fatalf("%s holds %q..., not upstream's protobuf", key, resp.Kvs[0].Value[:min(8, len(resp.Kvs[0].Value))])
		}
	}
	// Nothing went to Myriad's own layout.
	resp, err := raw.Get(ctx, "/registry/core/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("keys under /registry/core/: %d, %v", len(resp.Kvs), err)
	}
}
