package podcontrol

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	e := NewExpectations(clk)
	if !e.Satisfied("a") {
		t.Fatal("unknown key not satisfied")
	}
	e.Expect("a", 2, []string{"ns/p1", "ns/p2"})
	steps := []struct {
		do   func()
		want bool
	}{
		{func() {}, false},
		{func() { e.CreationObserved("a"); e.CreationObserved("a") }, false},
		{func() { e.DeletionObserved("a", "ns/p1"); e.DeletionObserved("a", "ns/p1") }, false}, // idempotent
		{func() { e.DeletionObserved("a", "ns/other") }, false},
		{func() { e.DeletionObserved("a", "ns/p2") }, true},
		{func() { e.CreationObserved("a") }, true}, // never below zero
	}
	for i, s := range steps {
		s.do()
		if got := e.Satisfied("a"); got != s.want {
			t.Fatalf("step %d: satisfied %v, want %v", i, got, s.want)
		}
	}
	e.Expect("b", 1, nil)
	clk.Step(ExpectationsTTL + time.Second)
	if !e.Satisfied("b") {
		t.Error("expired expectations still block")
	}
}

func TestSlowStartBatch(t *testing.T) {
	cases := []struct {
		count, failFrom int // calls numbered from 1 fail once > failFrom (0 = never)
		wantOK, wantRun int
	}{
		{count: 0, wantOK: 0, wantRun: 0},
		{count: 1, wantOK: 1, wantRun: 1},
		{count: 10, wantOK: 10, wantRun: 10}, // 1+2+4+3
		{count: 10, failFrom: 1, wantOK: 1, wantRun: 3},
		{count: 100, failFrom: 5, wantOK: 5, wantRun: 7},
	}
	for _, tc := range cases {
		var n atomic.Int32
		ok, err := SlowStartBatch(tc.count, SlowStartInitialBatch, func() error {
			i := n.Add(1)
			if tc.failFrom > 0 && int(i) > tc.failFrom {
				return errors.New("no")
			}
			return nil
		})
		if ok != tc.wantOK || int(n.Load()) != tc.wantRun || (err != nil) != (tc.wantOK < tc.count) {
			t.Errorf("%+v: ok %d ran %d err %v", tc, ok, n.Load(), err)
		}
	}
}

func TestRankForDeletion(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name, node string, phase corev1.PodPhase, readySince time.Duration, restarts int32, age time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		p.Spec.NodeName = node
		p.Status.Phase = phase
		if readySince > 0 {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readySince))}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: restarts}}
		return p
	}
	pods := []*corev1.Pod{
		pod("old-ready", "n1", corev1.PodRunning, time.Hour, 0, 2*time.Hour),
		pod("new-ready", "n2", corev1.PodRunning, time.Minute, 0, time.Hour),
		pod("crashy", "n3", corev1.PodRunning, time.Hour, 5, 2*time.Hour),
		pod("running-not-ready", "n4", corev1.PodRunning, 0, 0, time.Hour),
		pod("unknown", "n5", corev1.PodUnknown, 0, 0, time.Hour),
		pod("pending", "n6", corev1.PodPending, 0, 0, time.Hour),
		pod("unscheduled", "", corev1.PodPending, 0, 0, time.Hour),
		pod("doubled-a", "n7", corev1.PodRunning, time.Hour, 0, 3*time.Hour),
		pod("doubled-b", "n7", corev1.PodRunning, time.Hour, 0, 3*time.Hour),
	}
	cheap := pod("cheap", "n8", corev1.PodRunning, time.Minute, 0, time.Hour)
	cheap.Annotations = map[string]string{PodDeletionCostAnnotation: "-10"}
	dear := pod("dear", "n9", corev1.PodRunning, time.Minute, 0, time.Hour)
	dear.Annotations = map[string]string{PodDeletionCostAnnotation: "100"}
	pods = append(pods, dear, cheap)
	RankForDeletion(pods)
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	want := "unscheduled pending unknown running-not-ready cheap doubled-a doubled-b new-ready crashy old-ready dear"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order\n got %s\nwant %s", got, want)
	}
}

func TestComputeHash(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	a, b := ComputeHash(tmpl, nil), ComputeHash(tmpl.DeepCopy(), nil)
	if a != b {
		t.Fatalf("not deterministic: %s %s", a, b)
	}
	if c := ComputeHash(tmpl, ptr.To(int32(1))); c == a {
		t.Error("collisionCount does not change the hash")
	}
	tmpl.Spec.Containers[0].Image = "nginx:2"
	if ComputeHash(tmpl, nil) == a {
		t.Error("template change does not change the hash")
	}
	// rand.SafeEncodeString's alphabet: no vowels, no 0/1/3, so no words.
	for _, r := range a {
		if strings.ContainsRune("aeiou013", r) {
			t.Errorf("hash %q has %q", a, r)
		}
	}
}

func TestPodsForOwner(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})
	if err := AddControllerUIDIndexer(inf); err != nil {
		t.Fatal(err)
	}
	if err := AddControllerUIDIndexer(inf); err != nil { // idempotent
		t.Fatal(err)
	}
	pod := func(ns, name, owner string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: controlledBy(ns, name, owner, "ReplicaSet")}
	}
	for _, p := range []*corev1.Pod{pod("a", "mine", "u1"), pod("a", "theirs", "u2"), pod("a", "orphan", ""), pod("b", "far-orphan", ""), pod("b", "mine-elsewhere", "u1")} {
		_ = inf.GetIndexer().Add(p)
	}
	got, err := PodsForOwner(inf, "a", "u1")
	if err != nil {
		t.Fatal(err)
	}
	if names, want := sortedNames(got), []string{"mine", "orphan"}; !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
}

// A Deployment's claim reads its ReplicaSets and the namespace's orphan
// ReplicaSets through the same index.
func TestForOwnerReplicaSets(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &appsv1.ReplicaSet{}, 0, cache.Indexers{})
	if err := AddControllerUIDIndexer(inf); err != nil {
		t.Fatal(err)
	}
	rs := func(ns, name, owner string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: controlledBy(ns, name, owner, "Deployment")}
	}
	for _, r := range []*appsv1.ReplicaSet{rs("a", "mine", "d1"), rs("a", "theirs", "d2"), rs("a", "orphan", ""), rs("b", "far-orphan", "")} {
		_ = inf.GetIndexer().Add(r)
	}
	got, err := ForOwner[*appsv1.ReplicaSet](inf, "a", "d1")
	if err != nil {
		t.Fatal(err)
	}
	if names, want := sortedNames(got), []string{"mine", "orphan"}; !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
}

// controlledBy is the metadata of ns/name controlled by a kind named and
// with the UID owner, or of an orphan when owner is "".
func controlledBy(ns, name, owner, kind string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name}
	if owner != "" {
		m.OwnerReferences = []metav1.OwnerReference{{UID: types.UID(owner), Controller: ptr.To(true), Name: owner, Kind: kind}}
	}
	return m
}

func sortedNames[T metav1.Object](objs []T) []string {
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	return names
}
