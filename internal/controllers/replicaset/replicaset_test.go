package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

type harness struct {
	rc     *Controller
	client *fake.Clientset
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	rc, client, _ := podcontroltest.Harness(t, podcontroltest.NewClock(), New, objs...)
	return &harness{rc: rc, client: client}
}

func newRS(name string, n int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("rs-" + name), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			},
		},
	}
}

var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func ownedPod(rs *appsv1.ReplicaSet, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: rs.Namespace, UID: types.UID("pod-" + name), Labels: map[string]string{"app": rs.Name},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, controllerKind)},
	}}
}

func countActions(c *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == "" {
			n++
		}
	}
	return n
}

func TestScaleUpCreatesOwnedPodsOnce(t *testing.T) {
	rs := newRS("web", 5)
	h := newHarness(t, rs)
	ctx := context.Background()
	if err := h.rc.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	pods, _ := h.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 5 {
		t.Fatalf("%d pods, want 5", len(pods.Items))
	}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || !*ref.BlockOwnerDeletion || ref.Kind != "ReplicaSet" {
			t.Errorf("pod %s: controller ref %+v", p.Name, ref)
		}
		if p.Labels["app"] != "web" || p.GenerateName != "web-" {
			t.Errorf("pod %s: labels %v generateName %q", p.Name, p.Labels, p.GenerateName)
		}
	}
	// The cache has not seen the pods: expectations stop a second round.
	if err := h.rc.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := countActions(h.client, "create", "pods"); n != 5 {
		t.Errorf("%d creations after a second sync on a stale cache, want 5", n)
	}
	if adds, _ := h.rc.exp.Pending("default/web"); adds != 5 {
		t.Errorf("pending adds %d, want 5", adds)
	}
}

func TestBurstCapsOneSync(t *testing.T) {
	h := newHarness(t, newRS("big", 40))
	h.rc.burst = 16
	if err := h.rc.sync(context.Background(), "default/big"); err != nil {
		t.Fatal(err)
	}
	if n := countActions(h.client, "create", "pods"); n != 16 {
		t.Errorf("%d creations, want the burst of 16", n)
	}
}

func TestSlowStartStopsOnErrors(t *testing.T) {
	cases := []struct {
		name        string
		failAfter   int // creations that succeed before all fail
		wantCreates int // calls made: batches 1,2,4,... until the batch with a failure
	}{
		{"all fail", 0, 1},
		{"first ok", 1, 3}, // 1 ok, then batch of 2 has failures
		{"three ok", 3, 7}, // 1+2 ok, batch of 4 fails
		{"ten ok", 10, 15}, // 1+2+4 ok, batch of 8 has failures
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, newRS("web", 20))
			calls := 0
			h.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls > tc.failAfter {
					return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("quota"))
				}
				return false, nil, nil
			})
			err := h.rc.sync(context.Background(), "default/web")
			if err == nil {
				t.Fatal("sync succeeded despite failing creations")
			}
			if calls != tc.wantCreates {
				t.Errorf("%d create calls, want %d", calls, tc.wantCreates)
			}
			// Failed creations are not expected any more.
			if adds, _ := h.rc.exp.Pending("default/web"); adds != tc.failAfter {
				t.Errorf("pending adds %d, want %d", adds, tc.failAfter)
			}
			rs, _ := h.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
			c := condition(rs.Status.Conditions, appsv1.ReplicaSetReplicaFailure)
			if c == nil || c.Reason != "FailedCreate" {
				t.Errorf("conditions %+v, want ReplicaFailure/FailedCreate", rs.Status.Conditions)
			}
		})
	}
}

func TestScaleDownDeletesLowestRanked(t *testing.T) {
	rs := newRS("web", 2)
	now := metav1.NewTime(time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC))
	ready := func(p *corev1.Pod, node string) *corev1.Pod {
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		return p
	}
	pending := ownedPod(rs, "pending")
	pending.Status.Phase = corev1.PodPending
	pending.Spec.NodeName = "n1"
	unscheduled := ownedPod(rs, "unscheduled")
	notReady := ownedPod(rs, "notready")
	notReady.Spec.NodeName = "n3"
	notReady.Status.Phase = corev1.PodRunning
	h := newHarness(t, rs, ready(ownedPod(rs, "r1"), "n1"), ready(ownedPod(rs, "r2"), "n2"), pending, unscheduled, notReady)
	if err := h.rc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	slices.Sort(deleted)
	if want := []string{"notready", "pending", "unscheduled"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	if _, dels := h.rc.exp.Pending("default/web"); dels != 3 {
		t.Errorf("pending deletions %d, want 3", dels)
	}
	// Observing the same deletion twice counts once.
	h.rc.podEvents.Handler().OnDelete(pending)
	h.rc.podEvents.Handler().OnDelete(pending)
	if _, dels := h.rc.exp.Pending("default/web"); dels != 2 {
		t.Errorf("pending deletions %d after one observed, want 2", dels)
	}
}

func TestAdoptAndRelease(t *testing.T) {
	rs := newRS("web", 2)
	orphan := ownedPod(rs, "orphan")
	orphan.OwnerReferences = nil
	strayed := ownedPod(rs, "strayed")
	strayed.Labels = map[string]string{"app": "other"}
	foreign := ownedPod(rs, "foreign")
	foreign.OwnerReferences[0].UID = "someone-else"
	terminated := ownedPod(rs, "done")
	terminated.OwnerReferences = nil
	terminated.Status.Phase = corev1.PodSucceeded
	h := newHarness(t, rs, orphan, strayed, foreign, terminated, ownedPod(rs, "mine"))
	if err := h.rc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	patched := map[string]bool{}
	for _, a := range h.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patched[p.GetName()] = true
		}
	}
	if !patched["orphan"] || !patched["strayed"] || patched["foreign"] || patched["done"] || patched["mine"] {
		t.Errorf("patched %v, want orphan (adopt) and strayed (release)", patched)
	}
	o, _ := h.client.CoreV1().Pods("default").Get(context.Background(), "orphan", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != rs.UID {
		t.Errorf("orphan not adopted: %+v", o.OwnerReferences)
	}
	s, _ := h.client.CoreV1().Pods("default").Get(context.Background(), "strayed", metav1.GetOptions{})
	if len(s.OwnerReferences) != 0 {
		t.Errorf("strayed not released: %+v", s.OwnerReferences)
	}
	// mine + orphan = 2 = replicas: nothing created or deleted.
	if c, d := countActions(h.client, "create", "pods"), countActions(h.client, "delete", "pods"); c != 0 || d != 0 {
		t.Errorf("%d creations, %d deletions, want none", c, d)
	}
}

func TestStatusAvailableAfterMinReadySeconds(t *testing.T) {
	rs := newRS("web", 2)
	rs.Spec.MinReadySeconds = 10
	clk := podcontroltest.NewClock()
	mk := func(name string, readyFor time.Duration) *corev1.Pod {
		p := ownedPod(rs, name)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(clk.Now().Add(-readyFor))}}
		return p
	}
	cases := []struct {
		name                     string
		pods                     []*corev1.Pod
		wantReady, wantAvailable int32
	}{
		{"both long ready", []*corev1.Pod{mk("a", time.Minute), mk("b", time.Minute)}, 2, 2},
		{"one just ready", []*corev1.Pod{mk("a", time.Minute), mk("b", time.Second)}, 2, 1},
		{"none ready", []*corev1.Pod{ownedPod(rs, "a"), ownedPod(rs, "b")}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := calculateStatus(rs, tc.pods, nil, clk.Now())
			if st.Replicas != 2 || st.FullyLabeledReplicas != 2 || st.ReadyReplicas != tc.wantReady || st.AvailableReplicas != tc.wantAvailable {
				t.Errorf("status %+v, want ready %d available %d", st, tc.wantReady, tc.wantAvailable)
			}
		})
	}
}

func TestDeletingPodsDoNotCount(t *testing.T) {
	rs := newRS("web", 2)
	gone := ownedPod(rs, "gone")
	gone.DeletionTimestamp = ptr.To(metav1.Now())
	h := newHarness(t, rs, ownedPod(rs, "a"), gone)
	if err := h.rc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := countActions(h.client, "create", "pods"); n != 1 {
		t.Errorf("%d creations, want 1 replacing the terminating pod", n)
	}
	got, _ := h.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if got.Status.Replicas != 1 || got.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", got.Status)
	}
}

// TestRunReplacesDeletedPods runs the whole controller (informers, queue,
// workers, expectations) on a fake API.
func TestRunReplacesDeletedPods(t *testing.T) {
	clk := podcontroltest.NewClock()
	client := podcontroltest.NewClientset(clk)
	c := podcontroltest.NewContext(client, clk)
	rc, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.Informers.Start(ctx.Done())
	done := make(chan struct{})
	go func() { rc.Run(ctx, 3); close(done) }()
	defer func() { cancel(); <-done; c.Informers.Shutdown() }()
	// Each wait watches from before the writes it waits for.
	newWatch := func() watch.Interface {
		w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	created := newWatch()
	if _, err := client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func() []corev1.Pod {
		l, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return l.Items
	}
	waitN := func(w watch.Interface, n int) {
		t.Helper()
		podcontroltest.Until(t, w, fmt.Sprintf("%d pods", n), func() bool { return len(pods()) == n })
	}
	waitN(created, 3)
	replaced := newWatch()
	if err := client.CoreV1().Pods("default").Delete(ctx, pods()[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitN(replaced, 3)
	// Nothing more may be created: once the cache shows the three pods,
	// stop the workers (joining any sync in flight) and sync once more.
	cached := func() bool { l, _ := rc.pods.List(labels.Everything()); return len(l) == 3 }
	waitCtx, stopWaiting := context.WithTimeout(ctx, 10*time.Second)
	defer stopWaiting()
	if !cache.WaitForCacheSync(waitCtx.Done(), cached) {
		t.Fatal("the cache never showed the three pods")
	}
	cancel()
	<-done
	if err := rc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := countActions(client, "create", "pods"); n != 4 {
		t.Errorf("%d creations, want 3 + 1 replacement", n)
	}
}
