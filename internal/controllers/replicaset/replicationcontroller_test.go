package replicaset

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

var rcKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

func newRC(name string, n int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("rc-" + name), Generation: 2, ResourceVersion: "7",
			Labels: map[string]string{"app": name}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        ptr.To(n),
			MinReadySeconds: 3,
			Selector:        map[string]string{"app": name},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			},
		},
	}
}

func rcOwnedPod(rc *corev1.ReplicationController, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: rc.Namespace, UID: types.UID("pod-" + name), Labels: map[string]string{"app": rc.Name},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rcKind)},
	}}
}

// TestRCConversionRoundTrip: what the sync reads of a controller is what
// it writes back, so a status write never changes anything else.
func TestRCConversionRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		rc   *corev1.ReplicationController
	}{
		{"full", func() *corev1.ReplicationController {
			rc := newRC("web", 3)
			rc.Status = corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2,
				Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}}
			return rc
		}()},
		{"no template", func() *corev1.ReplicationController { rc := newRC("web", 0); rc.Spec.Template = nil; return rc }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rcFromReplicaSet(replicaSetFromRC(tc.rc)); !reflect.DeepEqual(got, tc.rc) {
				t.Errorf("round trip:\n got  %+v\n want %+v", got, tc.rc)
			}
		})
	}
	// An empty selector selects nothing rather than every pod.
	rc := newRC("web", 1)
	rc.Spec.Selector = nil
	if rs := replicaSetFromRC(rc); rs.Spec.Selector != nil {
		t.Errorf("selector %v from an empty map", rs.Spec.Selector)
	}
}

// TestRCScaleUpOwnsPodsAndWritesStatus: the shared sync creates pods that
// name the ReplicationController as controller, records events on it, and
// writes status to it.
func TestRCScaleUpOwnsPodsAndWritesStatus(t *testing.T) {
	rc := newRC("web", 3)
	ctrl, client, _ := podcontroltest.Harness(t, podcontroltest.NewClock(), NewReplicationManager, rc)
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	ctrl.recorder = rec
	ctx := context.Background()
	if err := ctrl.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID || ref.Name != "web" || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s: controller ref %+v", p.Name, ref)
		}
		if p.GenerateName != "web-" || p.Labels["app"] != "web" {
			t.Errorf("pod %s: generateName %q labels %v", p.Name, p.GenerateName, p.Labels)
		}
	}
	ev := <-rec.Events
	if want := "involvedObject{kind=ReplicationController,apiVersion=v1}"; !strings.Contains(ev, want) || !strings.Contains(ev, "SuccessfulCreate") {
		t.Errorf("event %q, want one on the ReplicationController", ev)
	}
	got, err := client.CoreV1().ReplicationControllers("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The fake holds the pods, but status counts what the cache showed.
	if got.Status.ObservedGeneration != 2 || got.Status.Replicas != 0 || !reflect.DeepEqual(got.Spec, rc.Spec) || !reflect.DeepEqual(got.Labels, rc.Labels) {
		t.Errorf("after sync: spec %+v labels %v status %+v", got.Spec, got.Labels, got.Status)
	}
	if n := countActions(client, "update", "replicasets"); n != 0 {
		t.Errorf("%d ReplicaSet updates from the RC controller", n)
	}
}

// TestRCAdoptReleaseAndStatus: adoption patches name the
// ReplicationController; pods another kind's object controls (a ReplicaSet
// with the same name) are left alone; status counts ready and available.
func TestRCAdoptReleaseAndStatus(t *testing.T) {
	rc := newRC("web", 3)
	clk := podcontroltest.NewClock()
	readyPod := func(p *corev1.Pod, since time.Duration) *corev1.Pod {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clk.Now().Add(-since))}}
		return p
	}
	orphan := readyPod(rcOwnedPod(rc, "orphan"), time.Minute)
	orphan.OwnerReferences = nil
	strayed := rcOwnedPod(rc, "strayed")
	strayed.Labels = map[string]string{"app": "other"}
	rsOwned := rcOwnedPod(rc, "rs-owned")
	rsOwned.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(newRS("web", 1), controllerKind)}
	mine := readyPod(rcOwnedPod(rc, "mine"), time.Second) // ready, not yet available (minReadySeconds 3)
	ctrl, client, _ := podcontroltest.Harness(t, clk, NewReplicationManager, rc, orphan, strayed, rsOwned, mine, rcOwnedPod(rc, "pending"))
	ctx := context.Background()
	if err := ctrl.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	patched := map[string]bool{}
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patched[p.GetName()] = true
		}
	}
	if !reflect.DeepEqual(patched, map[string]bool{"orphan": true, "strayed": true}) {
		t.Errorf("patched %v, want orphan (adopt) and strayed (release)", patched)
	}
	o, _ := client.CoreV1().Pods("default").Get(ctx, "orphan", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(o); ref == nil || ref.Kind != "ReplicationController" || ref.UID != rc.UID {
		t.Errorf("orphan not adopted by the RC: %+v", o.OwnerReferences)
	}
	// orphan + mine + pending = 3: nothing to create or delete.
	if c, d := countActions(client, "create", "pods"), countActions(client, "delete", "pods"); c != 0 || d != 0 {
		t.Errorf("%d creations, %d deletions, want none", c, d)
	}
	got, _ := client.CoreV1().ReplicationControllers("default").Get(ctx, "web", metav1.GetOptions{})
	want := corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2}
	if !reflect.DeepEqual(got.Status, want) {
		t.Errorf("status %+v, want %+v", got.Status, want)
	}
}

// TestRCScaleDownAndDeleted: deletions go to the RC's lowest-ranked pods;
// a deleted RC forgets its expectations.
func TestRCScaleDownAndDeleted(t *testing.T) {
	rc := newRC("web", 1)
	running := rcOwnedPod(rc, "running")
	running.Spec.NodeName = "n1"
	running.Status.Phase = corev1.PodRunning
	ctrl, client, _ := podcontroltest.Harness(t, podcontroltest.NewClock(), NewReplicationManager, rc, running, rcOwnedPod(rc, "unscheduled"))
	if err := ctrl.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetName())
		}
	}
	if !reflect.DeepEqual(deleted, []string{"unscheduled"}) {
		t.Errorf("deleted %v, want the unscheduled pod", deleted)
	}
	if _, dels := ctrl.exp.Pending("default/web"); dels != 1 {
		t.Errorf("pending deletions %d, want 1", dels)
	}
	// The RC goes: its key syncs to nothing and its expectations go.
	ctrl.deleteOwner(rc)
	if err := ctrl.kind.informer.GetIndexer().Delete(rc); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if _, dels := ctrl.exp.Pending("default/web"); dels != 0 {
		t.Errorf("pending deletions %d after the RC was deleted", dels)
	}
}

// TestRCRun runs the whole ReplicationController controller on a fake API:
// an RC created through the API gets its pods through the RC informer.
func TestRCRun(t *testing.T) {
	clk := podcontroltest.NewClock()
	client := podcontroltest.NewClientset(clk)
	c := podcontroltest.NewContext(client, clk)
	ctrl, err := NewReplicationManager(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.Informers.Start(ctx.Done())
	done := make(chan struct{})
	go func() { ctrl.Run(ctx, 2); close(done) }()
	defer func() { cancel(); <-done; c.Informers.Shutdown() }()
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ReplicationControllers("default").Create(ctx, newRC("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podcontroltest.Until(t, w, "2 pods owned by the RC", func() bool {
		l, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		n := 0
		for _, p := range l.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "ReplicationController" {
				n++
			}
		}
		return n == 2
	})
}
