package statefulset

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

func newHarness(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	sc, client, _ := podcontroltest.Harness(t, podcontroltest.NewClock(), New, objs...)
	return sc, client
}

func newSet(replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "set-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: "db-headless", PodManagementPolicy: policy,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "db:1"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
		},
	}
}

// setPod is ordinal o of set at revision rev, healthy or not.
func setPod(set *appsv1.StatefulSet, o int, rev string, ok bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("db-%d", o), Namespace: "default", UID: types.UID(fmt.Sprintf("p%d", o)),
		Labels:          map[string]string{"app": "db", RevisionHashLabel: rev},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)},
	}}
	if ok {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func podActions(c *fake.Clientset, verb string) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetVerb() != verb || a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			out = append(out, a.GetObject().(*corev1.Pod).Name)
		case k8stesting.DeleteAction:
			out = append(out, a.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestStatefulSetSync(t *testing.T) {
	old := "db-old"
	cases := []struct {
		name                   string
		set                    func() *appsv1.StatefulSet
		pods                   func(set *appsv1.StatefulSet, rev string) []runtime.Object
		wantCreate, wantDelete []string
	}{
		{name: "ordered: first pod only", set: func() *appsv1.StatefulSet { return newSet(3, appsv1.OrderedReadyPodManagement) },
			wantCreate: []string{"db-0"}},
		{name: "ordered: next once ready", set: func() *appsv1.StatefulSet { return newSet(3, appsv1.OrderedReadyPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, rev, true)}
			},
			wantCreate: []string{"db-1"}},
		{name: "ordered: waits for an unready predecessor", set: func() *appsv1.StatefulSet { return newSet(3, appsv1.OrderedReadyPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, rev, false)}
			}},
		{name: "parallel: all at once", set: func() *appsv1.StatefulSet { return newSet(3, appsv1.ParallelPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 1, rev, false)}
			},
			wantCreate: []string{"db-0", "db-2"}},
		{name: "ordered: scale down highest first", set: func() *appsv1.StatefulSet { return newSet(2, appsv1.OrderedReadyPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, rev, true), setPod(s, 1, rev, true), setPod(s, 2, rev, true), setPod(s, 3, rev, true)}
			},
			wantDelete: []string{"db-3"}},
		{name: "parallel: scale down all surplus", set: func() *appsv1.StatefulSet { return newSet(2, appsv1.ParallelPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, rev, true), setPod(s, 1, rev, true), setPod(s, 2, rev, true), setPod(s, 3, rev, true)}
			},
			wantDelete: []string{"db-2", "db-3"}},
		{name: "failed pod is recreated", set: func() *appsv1.StatefulSet { return newSet(1, appsv1.OrderedReadyPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				p := setPod(s, 0, rev, false)
				p.Status.Phase = corev1.PodFailed
				return []runtime.Object{p}
			},
			wantDelete: []string{"db-0"}},
		{name: "rolling update: highest old pod first", set: func() *appsv1.StatefulSet { return newSet(3, appsv1.OrderedReadyPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, old, true), setPod(s, 1, old, true), setPod(s, 2, old, true)}
			},
			wantDelete: []string{"db-2"}},
		{name: "rolling update: waits for the updated pod", set: func() *appsv1.StatefulSet { return newSet(3, appsv1.OrderedReadyPodManagement) },
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, old, true), setPod(s, 1, old, true), setPod(s, 2, rev, true)}
			},
			wantDelete: []string{"db-1"}},
		{name: "rolling update: partition protects lower ordinals", set: func() *appsv1.StatefulSet {
			s := newSet(3, appsv1.ParallelPodManagement)
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(int32(1))}
			return s
		},
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, old, true), setPod(s, 1, rev, true), setPod(s, 2, rev, true)}
			}},
		{name: "on delete: no updates", set: func() *appsv1.StatefulSet {
			s := newSet(1, appsv1.OrderedReadyPodManagement)
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			return s
		},
			pods: func(s *appsv1.StatefulSet, rev string) []runtime.Object {
				return []runtime.Object{setPod(s, 0, old, true)}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := tc.set()
			objs := []runtime.Object{set}
			if tc.pods != nil {
				objs = append(objs, tc.pods(set, revisionName(set))...)
			}
			sc, client := newHarness(t, objs...)
			if err := sc.sync(context.Background(), "default/db"); err != nil {
				t.Fatal(err)
			}
			if got := podActions(client, "create"); !slices.Equal(got, tc.wantCreate) {
				t.Errorf("created %v, want %v", got, tc.wantCreate)
			}
			if got := podActions(client, "delete"); !slices.Equal(got, tc.wantDelete) {
				t.Errorf("deleted %v, want %v", got, tc.wantDelete)
			}
		})
	}
}

func TestPodIdentityAndClaims(t *testing.T) {
	set := newSet(1, appsv1.OrderedReadyPodManagement)
	sc, client := newHarness(t, set)
	if err := sc.sync(context.Background(), "default/db"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := client.CoreV1().Pods("default").Get(ctx, "db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Hostname != "db-0" || p.Spec.Subdomain != "db-headless" || p.Labels[PodNameLabel] != "db-0" ||
		p.Labels[PodIndexLabel] != "0" || p.Labels[RevisionHashLabel] != revisionName(set) {
		t.Errorf("pod identity: hostname %q subdomain %q labels %v", p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-0" {
		t.Errorf("volumes %+v", p.Spec.Volumes)
	}
	pvc, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim not created: %v", err)
	}
	if pvc.Labels["app"] != "db" {
		t.Errorf("claim labels %v", pvc.Labels)
	}
}

func TestStatusRevisions(t *testing.T) {
	set := newSet(3, appsv1.OrderedReadyPodManagement)
	set.Status.CurrentRevision = "db-old"
	rev := revisionName(set)
	sc, client := newHarness(t, set, setPod(set, 0, "db-old", true), setPod(set, 1, "db-old", true), setPod(set, 2, rev, false))
	if err := sc.sync(context.Background(), "default/db"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.AppsV1().StatefulSets("default").Get(context.Background(), "db", metav1.GetOptions{})
	st := got.Status
	if st.Replicas != 3 || st.ReadyReplicas != 2 || st.CurrentReplicas != 2 || st.UpdatedReplicas != 1 ||
		st.CurrentRevision != "db-old" || st.UpdateRevision != rev || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
}
