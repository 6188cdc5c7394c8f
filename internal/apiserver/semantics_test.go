package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCreateSetsMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	cm := testConfigMap("", nil)
	cm.GenerateName = "gen-"
	cm.UID = "client-chosen"
	cm.CreationTimestamp = metav1.NewTime(time.Unix(1, 0))
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		out, err := cms.Create(ctx, cm.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.Name, "gen-") || len(out.Name) != len("gen-")+5 || seen[out.Name] {
			t.Fatalf("bad generated name %q", out.Name)
		}
		seen[out.Name] = true
		if out.UID == "" || out.UID == "client-chosen" {
			t.Fatalf("uid %q not set by the server", out.UID)
		}
		if time.Since(out.CreationTimestamp.Time) > time.Minute {
			t.Fatalf("creationTimestamp %v not set by the server", out.CreationTimestamp)
		}
		if out.ResourceVersion == "" || out.Namespace != "default" {
			t.Fatalf("bad metadata %+v", out.ObjectMeta)
		}
	}
}

func TestUpdateSemantics(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	deps := e.cs.AppsV1().Deployments("default")
	d, err := deps.Create(ctx, testDeployment("d", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Fatalf("generation %d on create, want 1", d.Generation)
	}

	t.Run("metadata change keeps generation", func(t *testing.T) {
		d.Labels = map[string]string{"x": "y"}
		out, err := deps.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Generation != 1 || out.ResourceVersion == d.ResourceVersion {
			t.Fatalf("generation %d rv %s (was %s)", out.Generation, out.ResourceVersion, d.ResourceVersion)
		}
		d = out
	})
	t.Run("spec change bumps generation", func(t *testing.T) {
		d.Spec.Replicas = ptr[int32](3)
		out, err := deps.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Generation != 2 {
			t.Fatalf("generation %d, want 2", out.Generation)
		}
		d = out
	})
	t.Run("no-op keeps resourceVersion", func(t *testing.T) {
		out, err := deps.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.ResourceVersion != d.ResourceVersion || out.Generation != d.Generation {
			t.Fatalf("no-op update changed rv %s→%s gen %d→%d", d.ResourceVersion, out.ResourceVersion, d.Generation, out.Generation)
		}
	})
	t.Run("stale update conflicts", func(t *testing.T) {
		stale := d.DeepCopy()
		d.Labels["z"] = "1"
		out, err := deps.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d = out
		stale.Labels["z"] = "2"
		_, err = deps.Update(ctx, stale, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), optimisticLockMessage) {
			t.Fatalf("want a Conflict with upstream's message, got %v", err)
		}
	})
	t.Run("main update ignores status", func(t *testing.T) {
		d.Status.Replicas = 42
		d.Spec.Paused = true
		out, err := deps.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status.Replicas != 0 || !out.Spec.Paused {
			t.Fatalf("status.replicas %d paused %v", out.Status.Replicas, out.Spec.Paused)
		}
		d = out
	})
	t.Run("status update ignores spec", func(t *testing.T) {
		d.Status.Replicas = 7
		d.Spec.Paused = false
		out, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status.Replicas != 7 || !out.Spec.Paused || out.Generation != d.Generation {
			t.Fatalf("status.replicas %d paused %v gen %d", out.Status.Replicas, out.Spec.Paused, out.Generation)
		}
		got, err := deps.Get(ctx, "d", metav1.GetOptions{})
		if err != nil || got.Status.Replicas != 7 {
			t.Fatalf("get after status update: %v %+v", err, got.Status)
		}
		d = out
	})
	t.Run("status patch", func(t *testing.T) {
		out, err := deps.Patch(ctx, "d", types.MergePatchType, []byte(`{"status":{"replicas":9},"spec":{"paused":false}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		if out.Status.Replicas != 9 || !out.Spec.Paused {
			t.Fatalf("status.replicas %d paused %v", out.Status.Replicas, out.Spec.Paused)
		}
		d = out
	})
	t.Run("dry-run update writes nothing", func(t *testing.T) {
		d.Spec.Replicas = ptr[int32](10)
		out, err := deps.Update(ctx, d, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if *out.Spec.Replicas != 10 {
			t.Fatalf("dry run did not answer the would-be object: %d", *out.Spec.Replicas)
		}
		got, _ := deps.Get(ctx, "d", metav1.GetOptions{})
		if *got.Spec.Replicas != 3 || got.ResourceVersion != d.ResourceVersion {
			t.Fatalf("dry run wrote: replicas %d rv %s", *got.Spec.Replicas, got.ResourceVersion)
		}
	})
}

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
			},
		},
	}
}

func TestDryRunCreateAndDelete(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	out, err := cms.Create(ctx, testConfigMap("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || out.Name != "dry" {
		t.Fatalf("dry-run create: %v %+v", err, out)
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run create stored the object: %v", err)
	}
	if _, err := cms.Create(ctx, testConfigMap("real", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "real", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "real", metav1.GetOptions{}); err != nil {
		t.Fatalf("dry-run delete removed the object: %v", err)
	}
}

func TestDeletePreconditions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, testConfigMap("pre", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pre  metav1.Preconditions
	}{
		{"uid", metav1.Preconditions{UID: ptr(types.UID("wrong"))}},
		{"resourceVersion", metav1.Preconditions{ResourceVersion: ptr("1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &tc.pre})
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed") {
				t.Fatalf("want 409 precondition failure, got %v", err)
			}
		})
	}
	if err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}}); err != nil {
		t.Fatalf("matching preconditions: %v", err)
	}
	if err := cms.Delete(ctx, "pre", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: want 404, got %v", err)
	}
}

func TestFinalizers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	cm := testConfigMap("fin", nil)
	cm.Finalizers = []string{"example.com/a", "example.com/b"}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "fin", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("an object with finalizers was removed: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("no deletionTimestamp after delete")
	}
	// A second delete changes nothing.
	if err := cms.Delete(ctx, "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = []string{"example.com/b"}
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "fin", metav1.GetOptions{}); err != nil {
		t.Fatalf("removed with a finalizer left: %v", err)
	}
	if _, err := cms.Patch(ctx, "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "object removed after its last finalizer", func() bool {
		_, err := cms.Get(ctx, "fin", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestGracefulPodDeletion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("unscheduled", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "unscheduled", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "unscheduled", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an unscheduled pod must go at once: %v", err)
	}

	p := testPod("running", "node-1")
	p.Spec.TerminationGracePeriodSeconds = ptr[int64](60)
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "running", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Get(ctx, "running", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a pod on a node must be deleted gracefully: %v", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 60 {
		t.Fatalf("deletionTimestamp %v grace %v", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	// A shorter grace period replaces the longer one; zero removes it.
	if err := pods.Delete(ctx, "running", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](30)}); err != nil {
		t.Fatal(err)
	}
	got, _ = pods.Get(ctx, "running", metav1.GetOptions{})
	if got == nil || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("grace period not shortened: %+v", got)
	}
	if err := pods.Delete(ctx, "running", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "running", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("force delete left the pod: %v", err)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.createNamespace("doomed")
	nss := e.cs.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Spec.Finalizers) == 0 || ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("new namespace: finalizers %v phase %q", ns.Spec.Finalizers, ns.Status.Phase)
	}
	if err := nss.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = nss.Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("want Terminating, got %v %+v", err, ns)
	}
	_, err = e.cs.CoreV1().ConfigMaps("doomed").Create(ctx, testConfigMap("late", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "being terminated") {
		t.Fatalf("create in a terminating namespace: want 403, got %v", err)
	}
	_, err = e.cs.CoreV1().ConfigMaps("never").Create(ctx, testConfigMap("x", nil), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: want 404, got %v", err)
	}
	ns.Spec.Finalizers = nil
	if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "finalized namespace removed", func() bool {
		_, err := nss.Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestDeleteCollection(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	for i, name := range []string{"a1", "a2", "b1", "b2"} {
		if _, err := cms.Create(ctx, testConfigMap(name, map[string]string{"group": name[:1], "i": string(rune('0' + i))}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.createNamespace("other")
	if _, err := e.cs.CoreV1().ConfigMaps("other").Create(ctx, testConfigMap("a3", map[string]string{"group": "a"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := func(ns string) []string {
		l, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "group"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, cm := range l.Items {
			out = append(out, cm.Name)
		}
		return out
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "group=a"}); err != nil {
		t.Fatal(err)
	}
	if got := names("default"); len(got) != 4 {
		t.Fatalf("dry-run deletecollection deleted: left %v", got)
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "group=a"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names("default"), ","); got != "b1,b2" {
		t.Fatalf("after deleting group=a: %s", got)
	}
	if got := strings.Join(names("other"), ","); got != "a3" {
		t.Fatalf("deletecollection crossed namespaces: other has %s", got)
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=b2"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names("default"), ","); got != "b1" {
		t.Fatalf("after deleting name=b2: %s", got)
	}
	err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "spec.nope=1"})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("deletecollection with an unknown field selector: want 400, got %v", err)
	}
}

func TestScaleSubresource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	deps := e.cs.AppsV1().Deployments("default")
	d, err := deps.Create(ctx, testDeployment("web", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 2 || sc.Name != "web" || sc.UID != d.UID || sc.Status.Selector != "app=web" || sc.ResourceVersion != d.ResourceVersion {
		t.Fatalf("bad scale %+v", sc)
	}
	sc.Spec.Replicas = 5
	out, err := deps.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Replicas != 5 {
		t.Fatalf("update scale answered %d", out.Spec.Replicas)
	}
	d2, _ := deps.Get(ctx, "web", metav1.GetOptions{})
	if *d2.Spec.Replicas != 5 || d2.Generation != 2 {
		t.Fatalf("deployment after scale: replicas %d generation %d", *d2.Spec.Replicas, d2.Generation)
	}
	// The scale read before the update is stale now.
	if _, err := deps.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale scale update: want 409, got %v", err)
	}
	var patched autoscalingv1.Scale
	err = e.cs.AppsV1().RESTClient().Patch(types.MergePatchType).Namespace("default").Resource("deployments").Name("web").
		SubResource("scale").Body([]byte(`{"spec":{"replicas":1}}`)).Do(ctx).Into(&patched)
	if err != nil {
		t.Fatal(err)
	}
	if patched.Spec.Replicas != 1 {
		t.Fatalf("scale patch: replicas %d", patched.Spec.Replicas)
	}
	if d3, _ := deps.Get(ctx, "web", metav1.GetOptions{}); *d3.Spec.Replicas != 1 {
		t.Fatalf("deployment after scale patch: replicas %d", *d3.Spec.Replicas)
	}
	neg := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}
	if _, err := deps.UpdateScale(ctx, "web", neg, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("negative replicas: want 422, got %v", err)
	}
	renamed := `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"other","namespace":"default"},"spec":{"replicas":2}}`
	e.do("PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale", []byte(renamed), "Content-Type: application/json").
		wantStatus(t, 400, metav1.StatusReasonBadRequest)
	if _, err := deps.GetScale(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("scale of a missing deployment: want 404, got %v", err)
	}
	rs, err := e.cs.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rs"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr[int32](1), Selector: d.Spec.Selector, Template: d.Spec.Template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := e.cs.AppsV1().ReplicaSets("default").GetScale(ctx, rs.Name, metav1.GetOptions{}); err != nil || sc.Spec.Replicas != 1 {
		t.Fatalf("replica set scale: %v %+v", err, sc)
	}
}

func TestBindingAndEviction(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods("default")
	for _, name := range []string{"p1", "p2", "free"} {
		p := testPod(name, "")
		if name == "free" {
			p.Labels = map[string]string{"app": "other"}
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"p1", "p2", "free"} {
		err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("bind %s: %v", name, err)
		}
	}
	p1, _ := pods.Get(ctx, "p1", metav1.GetOptions{})
	if p1.Spec.NodeName != "node-1" {
		t.Fatalf("binding did not set nodeName: %q", p1.Spec.NodeName)
	}
	err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Name: "node-2"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("second binding: want 409, got %v", err)
	}

	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "test"}},
		},
	}
	pdbs := e.cs.PolicyV1().PodDisruptionBudgets("default")
	pdb, err = pdbs.Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evict := func(name string) error {
		return pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})
	}
	// The budget's status has not been observed yet: no disruption allowed.
	if err := evict("p1"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction under an unobserved budget: want 429, got %v", err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
	if _, err := pdbs.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict("p1"); err != nil {
		t.Fatalf("eviction within the budget: %v", err)
	}
	if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); err != nil {
		// A bound pod is deleted gracefully, so it is still there, marked.
		t.Fatalf("evicted pod: %v", err)
	}
	if err := evict("p2"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction beyond the budget: want 429, got %v", err)
	}
	got, _ := pdbs.Get(ctx, "pdb", metav1.GetOptions{})
	if got.Status.DisruptionsAllowed != 0 || len(got.Status.DisruptedPods) != 1 {
		t.Fatalf("budget not charged: %+v", got.Status)
	}
	if err := evict("free"); err != nil {
		t.Fatalf("eviction of a pod no budget covers: %v", err)
	}
	if err := evict("missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("eviction of a missing pod: want 404, got %v", err)
	}
}
