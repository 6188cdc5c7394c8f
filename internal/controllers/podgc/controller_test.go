package podgc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func pod(name, node string, phase corev1.PodPhase, terminating bool, created time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if terminating {
		ts := metav1.NewTime(created)
		p.DeletionTimestamp = &ts
	}
	return p
}

func node(name string, ready corev1.ConditionStatus, outOfService bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	if outOfService {
		n.Spec.Taints = []corev1.Taint{{Key: outOfServiceTaint, Effect: corev1.TaintEffectNoExecute}}
	}
	return n
}

func TestCollect(t *testing.T) {
	tests := []struct {
		name      string
		objs      []runtime.Object
		threshold int
		steps     []time.Duration // clock steps, one pass after each (and one at start)
		want      []string        // pods deleted
	}{
		{"healthy pods stay", []runtime.Object{node("n", corev1.ConditionTrue, false), pod("a", "n", corev1.PodRunning, false, t0)}, 10, nil, nil},
		{"orphan waits out the quarantine", []runtime.Object{pod("a", "gone", corev1.PodRunning, false, t0)}, 10, []time.Duration{30 * time.Second}, nil},
		{"orphan deleted after the quarantine", []runtime.Object{pod("a", "gone", corev1.PodRunning, false, t0)}, 10, []time.Duration{41 * time.Second}, []string{"a"}},
		{"unscheduled terminating", []runtime.Object{pod("a", "", corev1.PodPending, true, t0), pod("b", "", corev1.PodPending, false, t0)}, 10, nil, []string{"a"}},
		{"terminating on out-of-service node", []runtime.Object{node("n", corev1.ConditionFalse, true), pod("a", "n", corev1.PodRunning, true, t0), pod("b", "n", corev1.PodRunning, false, t0)}, 10, nil, []string{"a"}},
		{"out-of-service but ready: kept", []runtime.Object{node("n", corev1.ConditionTrue, true), pod("a", "n", corev1.PodRunning, true, t0)}, 10, nil, nil},
		{"oldest finished beyond the threshold", []runtime.Object{node("n", corev1.ConditionTrue, false),
			pod("old", "n", corev1.PodSucceeded, false, t0), pod("mid", "n", corev1.PodFailed, false, t0.Add(time.Second)), pod("new", "n", corev1.PodSucceeded, false, t0.Add(2*time.Second))}, 2, nil, []string{"old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			clk := testingclock.NewFakeClock(t0)
			c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clk, Logger: slog.Default()})
			if err != nil {
				t.Fatal(err)
			}
			c.threshold = tc.threshold
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			f.Start(ctx.Done())
			f.WaitForCacheSync(ctx.Done())
			c.collect(ctx)
			for _, s := range tc.steps {
				clk.Step(s)
				c.collect(ctx)
			}
			var deleted []string
			for _, a := range client.Actions() {
				if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
					deleted = append(deleted, fmt.Sprint(a.(interface{ GetName() string }).GetName()))
				}
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, tc.want) {
				t.Fatalf("deleted %v, want %v", deleted, tc.want)
			}
		})
	}
}
