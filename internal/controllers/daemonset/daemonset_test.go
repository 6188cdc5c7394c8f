package daemonset

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

func newHarness(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	dc, client, _ := podcontroltest.Harness(t, podcontroltest.NewClock(), New, objs...)
	return dc, client
}

func newDS() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "ds-agent", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"role": "worker"},
					Containers:   []corev1.Container{{Name: "c", Image: "agent:1"}},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
		},
	}
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func daemonPod(ds *appsv1.DaemonSet, nodeName, hash string, ready bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-" + nodeName, Namespace: ds.Namespace, UID: types.UID("p-" + nodeName),
			Labels:          map[string]string{"app": "agent", RevisionHashLabel: hash},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)}},
		Spec: corev1.PodSpec{NodeName: nodeName},
	}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func actions(c *fake.Clientset, verb string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == "pods" {
			out = append(out, a)
		}
	}
	return out
}

func TestOnePodPerEligibleNode(t *testing.T) {
	ds := newDS()
	worker := map[string]string{"role": "worker"}
	noSchedule := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	noExecute := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	hash := templateHash(ds)
	dc, client := newHarness(t, ds,
		node("a", worker), node("b", worker),
		node("other", map[string]string{"role": "db"}),
		node("tainted", worker, noSchedule),
		node("tainted-running", worker, noSchedule), daemonPod(ds, "tainted-running", hash, true),
		node("evicting", worker, noExecute), daemonPod(ds, "evicting", hash, true),
		node("notready", worker, notReady), // tolerated by default
	)
	if err := dc.sync(context.Background(), "kube-system/agent"); err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, a := range actions(client, "create") {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		created = append(created, targetNode(p))
		if p.Spec.NodeName != "" || p.Labels[RevisionHashLabel] != hash || len(p.Spec.Tolerations) < 6 {
			t.Errorf("pod for %s: nodeName %q labels %v tolerations %d", targetNode(p), p.Spec.NodeName, p.Labels, len(p.Spec.Tolerations))
		}
	}
	slices.Sort(created)
	if want := []string{"a", "b", "notready"}; !slices.Equal(created, want) {
		t.Errorf("created on %v, want %v", created, want)
	}
	var deleted []string
	for _, a := range actions(client, "delete") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	if want := []string{"agent-evicting"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	got, _ := client.AppsV1().DaemonSets("kube-system").Get(context.Background(), "agent", metav1.GetOptions{})
	st := got.Status
	if st.DesiredNumberScheduled != 3 || st.CurrentNumberScheduled != 0 || st.NumberMisscheduled != 2 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestRollingUpdateMaxUnavailable(t *testing.T) {
	ds := newDS()
	worker := map[string]string{"role": "worker"}
	oldHash := "old"
	objs := []runtime.Object{ds}
	for _, n := range []string{"a", "b", "c", "d"} {
		objs = append(objs, node(n, worker), daemonPod(ds, n, oldHash, true))
	}
	cases := []struct {
		name       string
		notReady   string // node whose old pod is unavailable
		wantDelete int
	}{
		{"all available", "", 1},
		{"one unavailable old pod", "c", 1}, // the unavailable one; no budget left for more
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]runtime.Object(nil), objs...)
			if tc.notReady != "" {
				for i, o := range in {
					if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName == tc.notReady {
						in[i] = daemonPod(ds, tc.notReady, oldHash, false)
					}
				}
			}
			dc, client := newHarness(t, in...)
			if err := dc.sync(context.Background(), "kube-system/agent"); err != nil {
				t.Fatal(err)
			}
			dels := actions(client, "delete")
			if len(dels) != tc.wantDelete || len(actions(client, "create")) != 0 {
				t.Fatalf("%d deletions, %d creations", len(dels), len(actions(client, "create")))
			}
			if tc.notReady != "" && dels[0].(k8stesting.DeleteAction).GetName() != "agent-"+tc.notReady {
				t.Errorf("deleted %s, want the unavailable pod", dels[0].(k8stesting.DeleteAction).GetName())
			}
		})
	}
}

func TestShouldRun(t *testing.T) {
	tmpl := newPodTemplate(newDS(), "h")
	cases := []struct {
		node      *corev1.Node
		run, keep bool
	}{
		{node("w", map[string]string{"role": "worker"}), true, true},
		{node("x", nil), false, false},
		{node("u", map[string]string{"role": "worker"}, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), true, true},
		{node("p", map[string]string{"role": "worker"}, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectPreferNoSchedule}), true, true},
		{node("n", map[string]string{"role": "worker"}, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}), false, true},
	}
	for _, tc := range cases {
		if run, keep := shouldRun(tmpl, tc.node); run != tc.run || keep != tc.keep {
			t.Errorf("node %s: run %v keep %v, want %v %v", tc.node.Name, run, keep, tc.run, tc.keep)
		}
	}
}

func TestWaitsForTerminatingPod(t *testing.T) {
	ds := newDS()
	old := daemonPod(ds, "a", templateHash(ds), true)
	old.DeletionTimestamp = &metav1.Time{}
	dc, client := newHarness(t, ds, node("a", map[string]string{"role": "worker"}), old)
	if err := dc.sync(context.Background(), "kube-system/agent"); err != nil {
		t.Fatal(err)
	}
	if n := len(actions(client, "create")); n != 0 {
		t.Errorf("%d pods created while the old one terminates", n)
	}
	got, _ := client.AppsV1().DaemonSets("kube-system").Get(context.Background(), "agent", metav1.GetOptions{})
	if got.Status.DesiredNumberScheduled != 1 || got.Status.NumberAvailable != 0 || got.Status.NumberUnavailable != 1 {
		t.Errorf("status %+v", got.Status)
	}
}

func TestRollingUpdateSurge(t *testing.T) {
	worker := map[string]string{"role": "worker"}
	surgeDS := func() *appsv1.DaemonSet {
		ds := newDS()
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		}
		return ds
	}
	newPod := func(ds *appsv1.DaemonSet, n string, ready bool) *corev1.Pod {
		p := daemonPod(ds, n, templateHash(ds), ready)
		p.Name, p.UID = "agent-new-"+n, types.UID("new-"+n)
		return p
	}
	cases := []struct {
		name       string
		pods       func(ds *appsv1.DaemonSet) []runtime.Object
		wantCreate []string // nodes
		wantDelete []string // pod names
	}{
		{name: "one surge pod beside an old one", pods: func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, "a", "old", true), daemonPod(ds, "b", "old", true), daemonPod(ds, "c", "old", true)}
		}, wantCreate: []string{"a"}},
		{name: "surge in progress blocks the next", pods: func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, "a", "old", true), newPod(ds, "a", false), daemonPod(ds, "b", "old", true), daemonPod(ds, "c", "old", true)}
		}},
		{name: "new available: old goes", pods: func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, "a", "old", true), newPod(ds, "a", true), daemonPod(ds, "b", "old", true), daemonPod(ds, "c", "old", true)}
		}, wantDelete: []string{"agent-a"}},
		{name: "next node once the first finished", pods: func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{newPod(ds, "a", true), daemonPod(ds, "b", "old", true), daemonPod(ds, "c", "old", true)}
		}, wantCreate: []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := surgeDS()
			objs := append([]runtime.Object{ds, node("a", worker), node("b", worker), node("c", worker)}, tc.pods(ds)...)
			dc, client := newHarness(t, objs...)
			if err := dc.sync(context.Background(), "kube-system/agent"); err != nil {
				t.Fatal(err)
			}
			var created, deleted []string
			for _, a := range actions(client, "create") {
				created = append(created, targetNode(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)))
			}
			for _, a := range actions(client, "delete") {
				deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
			}
			if !slices.Equal(created, tc.wantCreate) || !slices.Equal(deleted, tc.wantDelete) {
				t.Errorf("created on %v deleted %v, want %v and %v", created, deleted, tc.wantCreate, tc.wantDelete)
			}
		})
	}
}
