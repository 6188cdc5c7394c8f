package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestCacheImageRestart: `myriad up` stopped with SIGTERM saves its
// caches' images, and the next start fills its caches from them instead
// of the store, serving the same objects by the same selectors and
// following what is written after; a SIGKILLed server saved none, and
// its next start lists the store.
func TestCacheImageRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own server")
	}
	dataDir := filepath.Join(t.TempDir(), "image")
	s, err := startServer(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.stop() }()
	c := s.protoClient(t)
	mkNamespace(t, c, "img")
	ctx := context.Background()
	for i := range 30 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Labels: map[string]string{"app": fmt.Sprintf("a%d", i%3), "tier": "web"}},
			// No scheduler or controller touches them: what the test
			// compares stays put.
			Spec: corev1.PodSpec{
				SchedulerName: "cache-image-test",
				RestartPolicy: []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure}[i%3],
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			},
		}
		if _, err := c.CoreV1().Pods("img").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%02d", i), Labels: map[string]string{"n": strconv.Itoa(i % 2)}}, Data: map[string]string{"k": "v"}}
		if _, err := c.CoreV1().ConfigMaps("img").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := imageSnapshot(t, c)

	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	images, _ := filepath.Glob(filepath.Join(dataDir, "cache-images", "*.image"))
	if len(images) < 10 {
		t.Fatalf("a clean stop saved %d cache images, want one per built-in resource", len(images))
	}

	s, err = startServerOnPort(dataDir, s.port)
	if err != nil {
		t.Fatal(err)
	}
	c = s.protoClient(t)
	for _, res := range []string{"pods", "configmaps", "namespaces"} {
		if n := imageFills(t, c, res); n != 1 {
			t.Errorf("the %s cache was filled from its image %d times after a clean stop, want 1", res, n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dataDir, "cache-images", "*.image")); len(left) != 0 {
		t.Errorf("images left after the start read them: %v", left)
	}
	after := imageSnapshot(t, c)
	if !reflect.DeepEqual(after, before) {
		t.Errorf("after the restart from images:\n%v\nbefore:\n%v", after, before)
	}

	// Writes go on from there: the caches follow the store.
	if err := c.CoreV1().Pods("img").Delete(ctx, "p00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps("img").Get(ctx, "cm01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Labels["n"] = "0"
	if _, err := c.CoreV1().ConfigMaps("img").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := imageSnapshot(t, c)
	if len(want["pods"]) != 29 || len(want["configmaps n=0"]) != 16 {
		t.Errorf("after a delete and a relabel: %d pods, %d configmaps n=0; want 29, 16", len(want["pods"]), len(want["configmaps n=0"]))
	}

	// SIGKILL: no images; the start lists the store and serves the same.
	s.kill()
	if left, _ := filepath.Glob(filepath.Join(dataDir, "cache-images", "*.image")); len(left) != 0 {
		t.Errorf("images after a SIGKILL: %v", left)
	}
	s, err = startServerOnPort(dataDir, s.port)
	if err != nil {
		t.Fatal(err)
	}
	c = s.protoClient(t)
	if n := imageFills(t, c, "pods"); n != 0 {
		t.Errorf("the pods cache was filled from an image %d times after a SIGKILL, want 0", n)
	}
	if got := imageSnapshot(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("after a SIGKILL and a start from the store:\n%v\nwant:\n%v", got, want)
	}
}

// imageSnapshot lists the test's objects by several selectors: names and
// resourceVersions, and each pod's restart policy, labels and phase.
func imageSnapshot(t *testing.T, c kubernetes.Interface) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	for name, opts := range map[string]metav1.ListOptions{
		"pods":        {},
		"pods app=a1": {LabelSelector: "app=a1"},
		"pods Never":  {FieldSelector: "spec.restartPolicy=Never"},
		"pods !Always,tier=web": {
			FieldSelector: "spec.restartPolicy!=Always,status.phase=Pending", LabelSelector: "tier=web",
		},
		"pods unscheduled": {FieldSelector: "spec.nodeName="},
		"pods p07":         {FieldSelector: "metadata.name=p07"},
	} {
		pods, err := c.CoreV1().Pods("img").List(ctx, opts)
		if err != nil {
			t.Fatalf("list %s: %v", name, err)
		}
		for _, p := range pods.Items {
			out[name] = append(out[name], fmt.Sprintf("%s@%s %s %v %s", p.Name, p.ResourceVersion, p.Spec.RestartPolicy, p.Labels, p.Status.Phase))
		}
	}
	for name, sel := range map[string]string{"configmaps": "", "configmaps n=0": "n=0"} {
		cms, err := c.CoreV1().ConfigMaps("img").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range cms.Items {
			out[name] = append(out[name], fmt.Sprintf("%s@%s %v %v", cm.Name, cm.ResourceVersion, cm.Labels, cm.Data))
		}
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, "img", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["namespace"] = []string{ns.Name + "@" + ns.ResourceVersion + " " + string(ns.Status.Phase)}
	return out
}

// imageFills reads myriad_watch_cache_image_fills_total of resource's
// cache from /metrics.
func imageFills(t *testing.T, c kubernetes.Interface, resource string) int {
	t.Helper()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^myriad_watch_cache_image_fills_total\{resource="` + regexp.QuoteMeta(resource) + `"\} (\d+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("/metrics has no myriad_watch_cache_image_fills_total for %s", resource)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
