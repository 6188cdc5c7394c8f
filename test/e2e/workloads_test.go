package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/daemonset"
	"github.com/myriad-k8s/myriad/internal/controllers/deployment"
	"github.com/myriad-k8s/myriad/internal/controllers/replicaset"
	"github.com/myriad-k8s/myriad/internal/controllers/statefulset"
)

// workloadEnv is `myriad apiserver` with the workload controllers running
// in this process against it, and a stand-in kubelet that marks pods
// Running and Ready (there are no nodes to run them).
type workloadEnv struct {
	s      *server
	client kubernetes.Interface
}

func startWorkloads(t testing.TB, descriptors ...controllerctx.Descriptor) *workloadEnv {
	t.Helper()
	s, err := startAPIServer(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	cfg := s.restConfig(t)
	cfg.QPS, cfg.Burst = 5000, 10000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &controllerctx.Context{
		Client:            client,
		Metadata:          md,
		Informers:         informers.NewSharedInformerFactory(client, 0),
		MetadataInformers: metadatainformer.NewSharedInformerFactory(md, 0),
		Events:            record.NewBroadcaster(),
		Clock:             clock.RealClock{},
		Logger:            slog.New(slog.DiscardHandler),
		Metrics:           prometheus.NewRegistry(),
	}
	var ctrls []controllerctx.Controller
	var workers []int
	for _, d := range descriptors {
		ctrl, err := d.New(c)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		ctrls = append(ctrls, ctrl)
		workers = append(workers, d.Workers)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; c.Informers.Shutdown(); c.Events.Shutdown() })
	c.Informers.Start(ctx.Done())
	c.MetadataInformers.Start(ctx.Done())
	go func() {
		defer close(done)
		finished := make(chan struct{}, len(ctrls))
		for i, ctrl := range ctrls {
			go func() { ctrl.Run(ctx, workers[i]); finished <- struct{}{} }()
		}
		for range ctrls {
			<-finished
		}
	}()
	return &workloadEnv{s: s, client: client}
}

// runKubelet marks every pod in namespace Running and Ready once, as a
// kubelet would after starting it, until ctx is done.
func (e *workloadEnv) runKubelet(ctx context.Context, t *testing.T, namespace string) {
	t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace(namespace))
	inf := f.Core().V1().Pods().Informer()
	queue := make(chan *corev1.Pod, 100000)
	mark := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodRunning {
			queue <- p
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: mark, UpdateFunc: func(_, cur any) { mark(cur) }}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	for range 8 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-queue:
					p = p.DeepCopy()
					now := metav1.Now()
					p.Status.Phase = corev1.PodRunning
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
					_, err := e.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
					if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
						t.Logf("kubelet: %v", err)
					}
				}
			}
		}()
	}
}

func (e *workloadEnv) countPods(t testing.TB, ns, selector string) int {
	t.Helper()
	pods, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func waitWorkload(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func workloadDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

func workloadControllers() []controllerctx.Descriptor {
	return []controllerctx.Descriptor{replicaset.Descriptor(), deployment.Descriptor(), daemonset.Descriptor(), statefulset.Descriptor()}
}

// TestWorkloadsDeployment: create → rollout of a new template with
// `kubectl rollout status` → `kubectl rollout undo`, then scaling another
// Deployment 0 → 1,000 → 0.
func TestWorkloadsDeployment(t *testing.T) {
	e := startWorkloads(t, workloadControllers()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.runKubelet(ctx, t, "default")
	deps := e.client.AppsV1().Deployments("default")

	t.Run("rollout and undo", func(t *testing.T) {
		if _, err := deps.Create(ctx, workloadDeployment("web", 5, "nginx:1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := e.s.mustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		if !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		e.s.mustKubectl(t, "", "set", "image", "deployment/web", "app=nginx:2")
		out = e.s.mustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		if !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		checkImages(t, e, "nginx:2", 5)
		hist := e.s.mustKubectl(t, "", "rollout", "history", "deployment/web")
		if !strings.Contains(hist, "1 ") || !strings.Contains(hist, "2 ") {
			t.Errorf("rollout history:\n%s", hist)
		}
		e.s.mustKubectl(t, "", "rollout", "undo", "deployment/web")
		e.s.mustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		checkImages(t, e, "nginx:1", 5)

		// Paused: a template change makes no new ReplicaSet until resumed.
		e.s.mustKubectl(t, "", "rollout", "pause", "deployment/web")
		e.s.mustKubectl(t, "", "set", "image", "deployment/web", "app=nginx:3")
		waitWorkload(t, 30*time.Second, "paused condition", func() (bool, error) {
			d, err := deps.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range d.Status.Conditions {
				if c.Type == appsv1.DeploymentProgressing && c.Reason == deployment.ReasonPaused {
					return d.Status.ObservedGeneration == d.Generation, nil
				}
			}
			return false, nil
		})
		checkImages(t, e, "nginx:1", 5)
		e.s.mustKubectl(t, "", "rollout", "resume", "deployment/web")
		e.s.mustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		checkImages(t, e, "nginx:3", 5)
		e.s.mustKubectl(t, "", "rollout", "undo", "deployment/web", "--to-revision=3")
		e.s.mustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		checkImages(t, e, "nginx:1", 5)
		rss, err := e.client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) != 3 {
			t.Fatalf("%d replicasets, want one per template", len(rss.Items))
		}
		// Revisions: 1 nginx:1, 2 nginx:2, 3 nginx:1 (undo), 4 nginx:3,
		// 5 nginx:1 (undo to 3): nginx:1's set carries 5 and history 1,3.
		want := map[string]string{"nginx:1": "5", "nginx:2": "2", "nginx:3": "4"}
		for _, rs := range rss.Items {
			img := rs.Spec.Template.Spec.Containers[0].Image
			rev := rs.Annotations[deployment.RevisionAnnotation]
			if rev != want[img] || !strings.HasPrefix(rs.Name, "web-") {
				t.Errorf("replicaset %s image %s revision %s, want %s", rs.Name, img, rev, want[img])
			}
			if img == "nginx:1" && rs.Annotations[deployment.RevisionHistoryAnnotation] != "1,3" {
				t.Errorf("revision history %q", rs.Annotations[deployment.RevisionHistoryAnnotation])
			}
		}
	})

	t.Run("scale 0 to 1000 to 0", func(t *testing.T) {
		if _, err := deps.Create(ctx, workloadDeployment("many", 0, "pause"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		scale := func(n int32) {
			t.Helper()
			start := time.Now()
			e.s.mustKubectl(t, "", "scale", "deployment/many", fmt.Sprintf("--replicas=%d", n))
			waitWorkload(t, 60*time.Second, fmt.Sprintf("%d pods", n), func() (bool, error) {
				return e.countPods(t, "default", "app=many") == int(n), nil
			})
			waitWorkload(t, 60*time.Second, "deployment status", func() (bool, error) {
				d, err := deps.Get(ctx, "many", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == n && d.Status.UpdatedReplicas == n && d.Status.AvailableReplicas == n, nil
			})
			t.Logf("scaled to %d in %v", n, time.Since(start).Round(time.Millisecond))
		}
		scale(1000)
		// Hold a moment: the count must stay at 1000 (no over-creation
		// while caches catch up).
		time.Sleep(500 * time.Millisecond)
		if n := e.countPods(t, "default", "app=many"); n != 1000 {
			t.Fatalf("%d pods after settling, want 1000", n)
		}
		scale(0)
	})
}

func checkImages(t *testing.T, e *workloadEnv, image string, n int) {
	t.Helper()
	waitWorkload(t, 30*time.Second, "pods with "+image, func() (bool, error) {
		pods, err := e.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		got := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if p.Spec.Containers[0].Image != image {
				return false, nil
			}
			got++
		}
		return got == n, nil
	})
}

// TestWorkloadsDaemonSet: one pod per eligible Node object, pinned by node
// affinity; a new node gets its pod, a tainted one does not.
func TestWorkloadsDaemonSet(t *testing.T) {
	e := startWorkloads(t, workloadControllers()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.runKubelet(ctx, t, "default")
	for i := range 4 {
		labels := map[string]string{"role": "worker"}
		if i == 3 {
			labels = map[string]string{"role": "db"}
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: labels}}
		if _, err := e.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"role": "worker"},
					Containers:   []corev1.Container{{Name: "agent", Image: "agent:1"}},
				},
			},
		},
	}
	if _, err := e.client.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podNodes := func() map[string]int {
		pods, err := e.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			a := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0]
			out[a.Values[0]]++
		}
		return out
	}
	want := func(nodes ...string) func() (bool, error) {
		return func() (bool, error) {
			got := podNodes()
			if len(got) != len(nodes) {
				return false, nil
			}
			for _, n := range nodes {
				if got[n] != 1 {
					return false, nil
				}
			}
			return true, nil
		}
	}
	waitWorkload(t, 30*time.Second, "pods on the 3 workers", want("node-0", "node-1", "node-2"))
	waitWorkload(t, 30*time.Second, "daemonset status", func() (bool, error) {
		d, err := e.client.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
		return err == nil && d.Status.DesiredNumberScheduled == 3 && d.Status.CurrentNumberScheduled == 3 && d.Status.ObservedGeneration == d.Generation, err
	})
	// A new worker gets a pod; a NoExecute taint takes one away.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-4", Labels: map[string]string{"role": "worker"}}}
	if _, err := e.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n0, err := e.client.CoreV1().Nodes().Get(ctx, "node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n0.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}
	if _, err := e.client.CoreV1().Nodes().Update(ctx, n0, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWorkload(t, 30*time.Second, "pods following the nodes", want("node-1", "node-2", "node-4"))

	// A rolling update, one node at a time, that kubectl sees finish.
	e.s.mustKubectl(t, "", "rollout", "status", "daemonset/agent", "--timeout=60s")
	e.s.mustKubectl(t, "", "set", "image", "daemonset/agent", "agent=agent:2")
	out := e.s.mustKubectl(t, "", "rollout", "status", "daemonset/agent", "--timeout=60s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status: %s", out)
	}
	pods, err := e.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live++
			if p.Spec.Containers[0].Image != "agent:2" {
				t.Errorf("pod %s still runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
	}
	if live != 3 {
		t.Errorf("%d pods after the update, want 3", live)
	}
}

// TestWorkloadsStatefulSet: ordered creation with stable names and claims,
// a rolling update highest ordinal first, scale down highest first.
func TestWorkloadsStatefulSet(t *testing.T) {
	e := startWorkloads(t, workloadControllers()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.runKubelet(ctx, t, "default")
	labels := map[string]string{"app": "db"}
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(3)), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	sets := e.client.AppsV1().StatefulSets("default")
	if _, err := sets.Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := e.s.mustKubectl(t, "", "rollout", "status", "statefulset/db", "--timeout=60s")
	if !strings.Contains(out, "roll out complete") && !strings.Contains(out, "rolling update complete") {
		t.Errorf("rollout status: %s", out)
	}
	pods, err := e.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]time.Time{}
	for _, p := range pods.Items {
		created[p.Name] = p.CreationTimestamp.Time
		if p.Spec.Hostname != p.Name || p.Spec.Subdomain != "db" {
			t.Errorf("pod %s hostname %q subdomain %q", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
		}
	}
	if len(created) != 3 || created["db-0"].After(created["db-1"]) || created["db-1"].After(created["db-2"]) {
		t.Errorf("pods %v, want db-0, db-1, db-2 in order", created)
	}
	for i := range 3 {
		if _, err := e.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, fmt.Sprintf("data-db-%d", i), metav1.GetOptions{}); err != nil {
			t.Errorf("claim data-db-%d: %v", i, err)
		}
	}
	e.s.mustKubectl(t, "", "set", "image", "statefulset/db", "db=db:2")
	e.s.mustKubectl(t, "", "rollout", "status", "statefulset/db", "--timeout=60s")
	waitWorkload(t, 30*time.Second, "updated pods", func() (bool, error) {
		pods, err := e.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == "db:2" {
				n++
			}
		}
		return n == 3, nil
	})
	e.s.mustKubectl(t, "", "scale", "statefulset/db", "--replicas=1")
	waitWorkload(t, 30*time.Second, "scale down to db-0", func() (bool, error) {
		pods, err := e.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 1 && pods.Items[0].Name == "db-0", nil
	})
}

// BenchmarkWorkloadsDeployment10k times a 10,000-replica Deployment from
// create to all 10,000 pods created (seen by a pod watch), and to the
// Deployment's status reporting them, through the real API with the
// replicaset and deployment controllers in-process. There is no
// scheduler or kubelet: the pods stay Pending.
//
//	go test ./test/e2e -run '^$' -bench BenchmarkWorkloadsDeployment10k -benchtime 1x
func BenchmarkWorkloadsDeployment10k(b *testing.B) {
	const replicas = 10000
	e := startWorkloads(b, replicaset.Descriptor(), deployment.Descriptor())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Count pods as a watcher sees them arrive.
	f := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace("default"))
	created := make(chan struct{}, replicas*2)
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { created <- struct{}{} },
	}); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	var allPods, allStatus time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-%d", i)
		start := time.Now()
		if _, err := e.client.AppsV1().Deployments("default").Create(ctx, workloadDeployment(name, replicas, "pause"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		timeout := time.After(10 * time.Minute)
		for n := 0; n < replicas; n++ {
			select {
			case <-created:
			case <-timeout:
				b.Fatalf("%d of %d pods after 10 min", n, replicas)
			}
		}
		allPods += time.Since(start)
		waitWorkload(b, 5*time.Minute, "deployment status", func() (bool, error) {
			d, err := e.client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && d.Status.Replicas == replicas, err
		})
		allStatus += time.Since(start)
		b.StopTimer()
		// Scale down and delete so the next iteration starts clean.
		if _, err := e.client.AppsV1().Deployments("default").Patch(ctx, name, "application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		waitWorkload(b, 5*time.Minute, "scale to 0", func() (bool, error) {
			return e.countPods(b, "default", "app="+name) == 0, nil
		})
		for len(created) > 0 {
			<-created
		}
		b.StartTimer()
	}
	b.ReportMetric(allPods.Seconds()/float64(b.N), "s-to-all-pods")
	b.ReportMetric(float64(replicas)*float64(b.N)/allPods.Seconds(), "pods/s")
	b.ReportMetric(allStatus.Seconds()/float64(b.N), "s-to-status")
}
