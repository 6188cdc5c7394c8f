package controlplane

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers"
	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/scheduler"
)

// TestComponentsShareInformers runs the real scheduler and controller
// manager in-process, as `myriad up` does, and checks that they read one
// informer per type: the same pod informer instance, fed from the watch
// cache (no pod or node LIST or WATCH reaches the API over HTTP), holding
// pods without managedFields, while a Deployment's pods are created by the
// controllers and bound by the scheduler through it.
func TestComponentsShareInformers(t *testing.T) {
	var mu sync.Mutex
	handed := map[string]informers.SharedInformerFactory{}
	record := func(name string, f informers.SharedInformerFactory) {
		mu.Lock()
		defer mu.Unlock()
		handed[name] = f
	}
	comps := []Component{
		{Name: "scheduler", Identity: pki.Identity{User: pki.SchedulerUser}, Run: func(ctx context.Context, rc *rest.Config, m prometheus.Registerer, shared informers.SharedInformerFactory) error {
			record("scheduler", shared)
			return scheduler.Run(ctx, scheduler.Config{RESTConfig: rc, LeaderElect: true, Metrics: m, Informers: shared})
		}},
		{Name: "controllers", Identity: pki.Identity{User: pki.ControllerManagerUser}, ReadsShared: true, Run: func(ctx context.Context, rc *rest.Config, m prometheus.Registerer, shared informers.SharedInformerFactory) error {
			record("controllers", shared)
			return controllers.Run(ctx, controllers.Config{RESTConfig: rc, LeaderElect: true, UseServiceAccountCredentials: true, Metrics: m, Informers: shared,
				Controllers: []string{"deployment", "replicaset", "serviceaccount", "garbagecollector", "podgc"}})
		}},
	}
	reg := prometheus.NewRegistry()
	cfg := Config{DataDir: t.TempDir(), SecurePort: freePort(t), Components: comps, Metrics: reg, WaitForDefaultServiceAccount: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() { done <- Run(ctx, cfg, ready) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("control plane not ready")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(rc)

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "shared"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sched, ctrl := handed["scheduler"], handed["controllers"]
	mu.Unlock()
	if sched == nil || ctrl == nil {
		t.Fatalf("components were handed factories %v", handed)
	}
	// Informer() wraps the factory's informer anew at every call: one
	// informer is one indexer.
	if sched.Core().V1().Pods().Informer().GetIndexer() != ctrl.Core().V1().Pods().Informer().GetIndexer() {
		t.Fatal("the scheduler and the controllers read pods through different informers")
	}
	if sched.Core().V1().Nodes().Informer().GetIndexer() != ctrl.Core().V1().Nodes().Informer().GetIndexer() {
		t.Fatal("the scheduler and the controllers read nodes through different informers")
	}
	// Waiting on the shared cache rather than by LISTs: the test's own
	// LIST would count against the check at the end.
	lister := sched.Core().V1().Pods().Lister()
	var cached []*corev1.Pod
	waitFor(t, 60*time.Second, "3 pods created by the controllers and bound by the scheduler", func() bool {
		var err error
		cached, err = lister.Pods("default").List(k8slabels.SelectorFromSet(labels))
		if err != nil || len(cached) != 3 {
			return false
		}
		for _, p := range cached {
			if p.Spec.NodeName != "n1" {
				return false
			}
		}
		return true
	})
	for _, p := range cached {
		served, err := client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(served.ManagedFields) == 0 {
			t.Errorf("pod %s as served has no managedFields; the trim check proves nothing", p.Name)
		}
		if p.ManagedFields != nil || p.Kind != "" {
			t.Errorf("cached pod %s keeps managedFields (%d) or kind %q", p.Name, len(p.ManagedFields), p.Kind)
		}
		// The scheduler's and the controllers' listers are one store:
		// the very same object.
		again, err := ctrl.Core().V1().Pods().Lister().Pods("default").Get(p.Name)
		if err != nil || again != p {
			t.Errorf("the controllers' lister returns another copy of pod %s (%v)", p.Name, err)
		}
	}

	// Neither component listed or watched pods or nodes over HTTP (a
	// watch is counted in apiserver_request_total when it ends, and in
	// apiserver_longrunning_requests while it is open).
	for _, resource := range []string{"pods", "nodes"} {
		for _, verb := range []string{"LIST", "WATCH"} {
			if n := metricSum(t, reg, "apiserver_request_total", verb, resource) + metricSum(t, reg, "apiserver_longrunning_requests", verb, resource); n != 0 {
				t.Errorf("%v %s requests for %s reached the server; the shared informers should read the watch cache", n, verb, resource)
			}
		}
	}
	// The checks above can fail: the controllers' ServiceAccount informer
	// goes over HTTP and its watch is open, and a LIST of pods is counted.
	if n := metricSum(t, reg, "apiserver_longrunning_requests", "WATCH", "serviceaccounts"); n == 0 {
		t.Error("no open WATCH of serviceaccounts counted: the metric does not see informers")
	}
	if _, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := metricSum(t, reg, "apiserver_request_total", "LIST", "pods"); n != 1 {
		t.Errorf("apiserver_request_total counts %v pod LISTs after one", n)
	}
}

// metricSum sums the counter or gauge name over verb and resource.
func metricSum(t *testing.T, reg *prometheus.Registry, name, verb, resource string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["verb"] == verb && l["resource"] == resource && l["subresource"] == "" {
				n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return n
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOwnCopy: a watch cache's event object is never modified; the
// informer gets a copy without managedFields and kind when there is
// anything to drop, the object itself when not.
func TestOwnCopy(t *testing.T) {
	withFields := func() *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
			Spec:       corev1.PodSpec{NodeName: "n"},
		}
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	status := &metav1.Status{Message: "gone"}
	tests := []struct {
		name     string
		obj      k8sruntime.Object
		wantSame bool
	}{
		{"managed fields and kind", withFields(), false},
		{"kind only", &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node"}}, false},
		{"nothing to drop", bare, true},
		{"not an object with metadata", status, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.obj.DeepCopyObject()
			got := ownCopy(tc.obj)
			if !equality.Semantic.DeepEqual(before, tc.obj) {
				t.Fatalf("ownCopy modified its argument: %+v", tc.obj)
			}
			if (got == tc.obj) != tc.wantSame {
				t.Fatalf("ownCopy returned the argument itself: %v, want %v", got == tc.obj, tc.wantSame)
			}
			if m, ok := got.(metav1.ObjectMetaAccessor); ok && m.GetObjectMeta().GetManagedFields() != nil {
				t.Errorf("copy keeps managedFields")
			}
			if !tc.wantSame && !got.GetObjectKind().GroupVersionKind().Empty() {
				t.Errorf("copy keeps kind %v", got.GetObjectKind().GroupVersionKind())
			}
		})
	}
	p := withFields()
	cp := ownCopy(p).(*corev1.Pod)
	if cp.Name != "p" || cp.Spec.NodeName != "n" || cp.Labels["a"] != "b" {
		t.Errorf("copy lost fields: %+v", cp)
	}
	if _, err := trim(p); err != nil || p.ManagedFields != nil || p.Kind != "" {
		t.Errorf("trim left managedFields %v, kind %q (err %v)", p.ManagedFields, p.Kind, err)
	}
}

// TestComponentFactoryOutlivesComponent: a component that starts the
// shared factory and stops does not stop the informers the others read;
// the owner's stop does.
func TestComponentFactoryOutlivesComponent(t *testing.T) {
	s, err := newSharedInformers(&benchCaches{pods: newBenchPodSource(nil, decodePod)}, &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	f := s.forComponents()
	inf := f.Core().V1().Pods().Informer()
	componentStop := make(chan struct{})
	f.Start(componentStop)
	if !toolscache.WaitForCacheSync(componentStop, inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	close(componentStop)
	f.Shutdown()
	time.Sleep(100 * time.Millisecond)
	if inf.IsStopped() {
		t.Fatal("a component's stop ended the shared informers")
	}
	s.stop()
	if !inf.IsStopped() {
		t.Fatal("the owner's stop left the informers running")
	}
	s.stop() // idempotent
}
