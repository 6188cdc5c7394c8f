package deployment

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

type harness struct {
	t      *testing.T
	dc     *Controller
	client *fake.Clientset
	inf    informers.SharedInformerFactory
	clock  *clocktesting.FakeClock
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	clk := podcontroltest.NewClock()
	dc, client, c := podcontroltest.Harness(t, clk, New, objs...)
	h := &harness{t: t, dc: dc, client: client, inf: c.Informers, clock: clk}
	h.syncCache()
	return h
}

// syncCache makes the listers show what the fake API holds, as the
// informers would after their watch events.
func (h *harness) syncCache() {
	ctx := context.Background()
	ds, _ := h.client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	dIdx := h.inf.Apps().V1().Deployments().Informer().GetIndexer()
	for i := range ds.Items {
		_ = dIdx.Update(&ds.Items[i])
	}
	rss, _ := h.client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
	rsIdx := h.inf.Apps().V1().ReplicaSets().Informer().GetIndexer()
	for _, o := range rsIdx.List() {
		_ = rsIdx.Delete(o)
	}
	for i := range rss.Items {
		_ = rsIdx.Add(&rss.Items[i])
	}
}

func (h *harness) sync() {
	h.t.Helper()
	if err := h.dc.sync(context.Background(), "default/web"); err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	h.syncCache()
}

func (h *harness) deployment() *appsv1.Deployment {
	d, err := h.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

func (h *harness) replicaSets() map[string]*appsv1.ReplicaSet {
	rss, _ := h.client.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{})
	out := map[string]*appsv1.ReplicaSet{}
	for i := range rss.Items {
		out[rss.Items[i].Spec.Template.Spec.Containers[0].Image] = &rss.Items[i]
	}
	return out
}

// makeAvailable plays the ReplicaSet controller: every RS has its
// spec.replicas pods, all available.
func (h *harness) makeAvailable() {
	ctx := context.Background()
	for _, rs := range h.replicaSets() {
		n := *rs.Spec.Replicas
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n, FullyLabeledReplicas: n, ObservedGeneration: rs.Generation}
		if _, err := h.client.AppsV1().ReplicaSets("default").UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	h.syncCache()
}

func (h *harness) update(f func(d *appsv1.Deployment)) {
	d := h.deployment()
	f(d)
	d.Generation++
	if _, err := h.client.AppsV1().Deployments("default").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.syncCache()
}

func newDeployment(replicas int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-web", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%")),
			}},
			RevisionHistoryLimit:    ptr.To(int32(10)),
			ProgressDeadlineSeconds: ptr.To(int32(600)),
		},
	}
}

func TestCreatesReplicaSetNamedByHash(t *testing.T) {
	d := newDeployment(4, "nginx:1")
	h := newHarness(t, d)
	h.sync()
	rss := h.replicaSets()
	rs := rss["nginx:1"]
	if rs == nil {
		t.Fatalf("no replicaset: %v", rss)
	}
	hash := podcontrol.ComputeHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash || rs.Labels[PodTemplateHashLabel] != hash || rs.Spec.Selector.MatchLabels[PodTemplateHashLabel] != hash ||
		rs.Spec.Template.Labels[PodTemplateHashLabel] != hash {
		t.Errorf("replicaset %s labels %v selector %v, want hash %s", rs.Name, rs.Labels, rs.Spec.Selector, hash)
	}
	if *rs.Spec.Replicas != 4 || rs.Annotations[RevisionAnnotation] != "1" || rs.Annotations[DesiredReplicasAnnotation] != "4" || rs.Annotations[MaxReplicasAnnotation] != "5" {
		t.Errorf("replicas %d annotations %v", *rs.Spec.Replicas, rs.Annotations)
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" {
		t.Errorf("owner %+v", rs.OwnerReferences)
	}
	got := h.deployment()
	if got.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision %q", got.Annotations[RevisionAnnotation])
	}
	if c := getCondition(&got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSCreated {
		t.Errorf("progressing %+v", c)
	}
	// Pods become available: complete, status as `kubectl rollout status` wants it.
	h.makeAvailable()
	h.sync()
	got = h.deployment()
	st := got.Status
	if st.ObservedGeneration != got.Generation || st.Replicas != 4 || st.UpdatedReplicas != 4 || st.AvailableReplicas != 4 || st.UnavailableReplicas != 0 {
		t.Errorf("status %+v", st)
	}
	if c := getCondition(&st, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSAvailable {
		t.Errorf("progressing %+v", c)
	}
	if c := getCondition(&st, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("available %+v", c)
	}
}

func TestRollingUpdateRespectsSurgeAndUnavailable(t *testing.T) {
	h := newHarness(t, newDeployment(10, "v1"))
	h.sync()
	h.makeAvailable()
	h.sync()
	h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })

	// Never more than 10+3 (25% surge, rounded up) pods, never fewer than
	// 10-2 (25% unavailable, rounded down) available.
	for step := 0; step < 30; step++ {
		h.sync()
		rss := h.replicaSets()
		total := int32(0)
		for _, rs := range rss {
			total += *rs.Spec.Replicas
		}
		if total > 13 {
			t.Fatalf("step %d: %d replicas over the surge", step, total)
		}
		if old := rss["v1"]; old != nil && rss["v2"] != nil && *old.Spec.Replicas < 8-rss["v2"].Status.AvailableReplicas {
			t.Fatalf("step %d: old scaled to %d with %d new available", step, *old.Spec.Replicas, rss["v2"].Status.AvailableReplicas)
		}
		h.makeAvailable()
		if v2 := rss["v2"]; v2 != nil && *v2.Spec.Replicas == 10 && *rss["v1"].Spec.Replicas == 0 {
			break
		}
	}
	h.sync()
	rss := h.replicaSets()
	if *rss["v2"].Spec.Replicas != 10 || *rss["v1"].Spec.Replicas != 0 {
		t.Fatalf("rollout did not finish: v1 %d v2 %d", *rss["v1"].Spec.Replicas, *rss["v2"].Spec.Replicas)
	}
	if rss["v2"].Annotations[RevisionAnnotation] != "2" {
		t.Errorf("v2 revision %q", rss["v2"].Annotations[RevisionAnnotation])
	}
	st := h.deployment().Status
	if st.UpdatedReplicas != 10 || st.Replicas != 10 || st.AvailableReplicas != 10 {
		t.Errorf("status %+v", st)
	}
}

func TestFirstRollingStep(t *testing.T) {
	h := newHarness(t, newDeployment(10, "v1"))
	h.sync()
	h.makeAvailable()
	h.sync()
	h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	h.sync() // creates v2 at the surge: 3
	if n := *h.replicaSets()["v2"].Spec.Replicas; n != 3 {
		t.Fatalf("new replicaset at %d, want 3", n)
	}
	h.sync() // no new pod available: old may drop by maxUnavailable only
	if n := *h.replicaSets()["v1"].Spec.Replicas; n != 8 {
		t.Fatalf("old replicaset at %d, want 8", n)
	}
}

func TestRollbackReusesOldReplicaSet(t *testing.T) {
	h := newHarness(t, newDeployment(2, "v1"))
	h.sync()
	h.makeAvailable()
	h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	for range 10 {
		h.sync()
		h.makeAvailable()
	}
	v1Name := h.replicaSets()["v1"].Name
	// `kubectl rollout undo` patches the template back.
	h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v1" })
	for range 10 {
		h.sync()
		h.makeAvailable()
	}
	rss := h.replicaSets()
	if len(rss) != 2 || rss["v1"].Name != v1Name {
		t.Fatalf("rollback made a new replicaset: %d sets", len(rss))
	}
	v1 := rss["v1"]
	if v1.Annotations[RevisionAnnotation] != "3" || v1.Annotations[RevisionHistoryAnnotation] != "1" || *v1.Spec.Replicas != 2 {
		t.Errorf("v1 after rollback: replicas %d annotations %v", *v1.Spec.Replicas, v1.Annotations)
	}
	if *rss["v2"].Spec.Replicas != 0 {
		t.Errorf("v2 still at %d", *rss["v2"].Spec.Replicas)
	}
	if got := h.deployment().Annotations[RevisionAnnotation]; got != "3" {
		t.Errorf("deployment revision %q", got)
	}
}

func TestRecreateScalesDownFirst(t *testing.T) {
	d := newDeployment(3, "v1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	h := newHarness(t, d)
	h.sync()
	h.makeAvailable()
	h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	h.sync()
	rss := h.replicaSets()
	if *rss["v1"].Spec.Replicas != 0 || rss["v2"] != nil {
		t.Fatalf("first step: v1 %d, v2 exists %v", *rss["v1"].Spec.Replicas, rss["v2"] != nil)
	}
	// v1 still reports pods: no new replicaset yet.
	h.sync()
	if h.replicaSets()["v2"] != nil {
		t.Fatal("new replicaset created while old pods run")
	}
	h.makeAvailable() // v1 now 0 pods
	h.sync()
	if v2 := h.replicaSets()["v2"]; v2 == nil || *v2.Spec.Replicas != 3 {
		t.Fatalf("v2 %+v", v2)
	}
}

func TestProportionalScaling(t *testing.T) {
	h := newHarness(t, newDeployment(10, "v1"))
	h.sync()
	h.makeAvailable()
	h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v2" })
	h.sync() // v2 → 3 (surge), v1 → 8 (unavailable)
	rss := h.replicaSets()
	if *rss["v1"].Spec.Replicas != 8 || *rss["v2"].Spec.Replicas != 3 {
		t.Fatalf("setup: v1 %d v2 %d", *rss["v1"].Spec.Replicas, *rss["v2"].Spec.Replicas)
	}
	// Scale to 20 mid-rollout: 25 allowed (20 + 5 surge), 11 now, 14 to
	// add in proportion to 8:3 of the max-replicas 13.
	h.update(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(int32(20)) })
	h.sync()
	rss = h.replicaSets()
	v1, v2 := *rss["v1"].Spec.Replicas, *rss["v2"].Spec.Replicas
	// v1: 8*25/13 = 15.4 → +7 (min with 14); v2: 3*25/13 = 5.8 → +3.
	// Leftover 4 goes to the largest (v1).
	if v1 != 19 || v2 != 6 {
		t.Errorf("after scale: v1 %d v2 %d, want 19 and 6", v1, v2)
	}
	for _, rs := range rss {
		if rs.Annotations[DesiredReplicasAnnotation] != "20" || rs.Annotations[MaxReplicasAnnotation] != "25" {
			t.Errorf("%s annotations %v", rs.Name, rs.Annotations)
		}
	}
}

func TestProgressDeadline(t *testing.T) {
	d := newDeployment(2, "v1")
	d.Spec.ProgressDeadlineSeconds = ptr.To(int32(30))
	h := newHarness(t, d)
	h.sync()
	h.sync()
	if c := getCondition(&h.deployment().Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSCreated {
		t.Fatalf("progressing %+v", c)
	}
	h.clock.Step(31 * time.Second)
	h.sync()
	c := getCondition(&h.deployment().Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != ReasonTimedOut || c.Status != corev1.ConditionFalse {
		t.Fatalf("after the deadline: %+v", c)
	}
	// Progress after a timeout: the rollout completes and says so.
	h.makeAvailable()
	h.sync()
	if c := getCondition(&h.deployment().Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSAvailable {
		t.Fatalf("after progress: %+v", c)
	}
}

func TestPausedOnlyScales(t *testing.T) {
	h := newHarness(t, newDeployment(2, "v1"))
	h.sync()
	h.makeAvailable()
	h.update(func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "v2"
		d.Spec.Replicas = ptr.To(int32(5))
	})
	h.sync()
	rss := h.replicaSets()
	if rss["v2"] != nil || *rss["v1"].Spec.Replicas != 5 {
		t.Fatalf("paused: v2 exists %v, v1 %d", rss["v2"] != nil, *rss["v1"].Spec.Replicas)
	}
	if c := getCondition(&h.deployment().Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonPaused {
		t.Errorf("progressing %+v", c)
	}
	h.update(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	h.sync()
	if h.replicaSets()["v2"] == nil {
		t.Error("resumed but no new replicaset")
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	d := newDeployment(1, "v0")
	d.Spec.RevisionHistoryLimit = ptr.To(int32(2))
	h := newHarness(t, d)
	for i := 1; i <= 5; i++ {
		for range 6 {
			h.sync()
			h.makeAvailable()
		}
		h.update(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "v" + string(rune('0'+i)) })
	}
	for range 6 {
		h.sync()
		h.makeAvailable()
	}
	var names []string
	for img := range h.replicaSets() {
		names = append(names, img)
	}
	if len(names) != 3 { // current + 2 old
		t.Errorf("replicasets for %s, want the current one and 2 old", strings.Join(names, ","))
	}
	if h.replicaSets()["v5"] == nil || h.replicaSets()["v4"] == nil || h.replicaSets()["v3"] == nil {
		t.Errorf("kept %v, want v3 v4 v5", names)
	}
}

func TestAdoptsOrphanReplicaSet(t *testing.T) {
	d := newDeployment(2, "v1")
	hash := podcontrol.ComputeHash(&d.Spec.Template, nil)
	orphan := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Namespace: "default", UID: types.UID("orphan"), Labels: map[string]string{"app": "web", PodTemplateHashLabel: hash}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", PodTemplateHashLabel: hash}},
			Template: *d.Spec.Template.DeepCopy()},
	}
	orphan.Spec.Template.Labels[PodTemplateHashLabel] = hash
	h := newHarness(t, d, orphan)
	h.sync()
	rss := h.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("%d replicasets, want the adopted one", len(rss))
	}
	if ref := metav1.GetControllerOf(rss["v1"]); ref == nil || ref.UID != d.UID {
		t.Errorf("not adopted: %+v", rss["v1"].OwnerReferences)
	}
}

func TestFenceposts(t *testing.T) {
	cases := []struct {
		replicas       int32
		surge, unavail intstr.IntOrString
		wantS, wantU   int32
	}{
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2},
		{1, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0},
		{4, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1},
		{5, intstr.FromInt32(2), intstr.FromString("50%"), 2, 2},
		{3, intstr.FromString("100%"), intstr.FromInt32(0), 3, 0},
	}
	for _, tc := range cases {
		d := newDeployment(tc.replicas, "x")
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &tc.surge, MaxUnavailable: &tc.unavail}
		if s, u := maxSurge(d), maxUnavailable(d); s != tc.wantS || u != tc.wantU {
			t.Errorf("%d replicas %s/%s: surge %d unavailable %d, want %d %d", tc.replicas, tc.surge.String(), tc.unavail.String(), s, u, tc.wantS, tc.wantU)
		}
	}
}
