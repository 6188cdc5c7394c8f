package job

import (
	"context"
	"slices"
	"strconv"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

func TestFormatIndexes(t *testing.T) {
	cases := map[string][]int{"": nil, "0": {0}, "0-3": {0, 1, 2, 3}, "1,3-5,7": {1, 3, 4, 5, 7}, "0,2": {0, 2}}
	for want, in := range cases {
		if got := formatIndexes(in); got != want {
			t.Errorf("%v: %q, want %q", in, got, want)
		}
	}
}

func TestIndexedJob(t *testing.T) {
	indexed := func() *batchv1.Job {
		j := newJob(ptr.To(int32(4)), ptr.To(int32(2)))
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		return j
	}
	idxPod := func(j *batchv1.Job, n, index int, phase corev1.PodPhase) *corev1.Pod {
		p := jobPod(j, n, phase, podcontroltest.NewClock().Now())
		p.Annotations = map[string]string{CompletionIndexAnnotation: strconv.Itoa(index)}
		return p
	}
	cases := []struct {
		name          string
		pods          func(j *batchv1.Job) []runtime.Object
		wantIndexes   []string // of created pods
		wantDeletes   int
		wantCompleted string
		wantComplete  bool
	}{
		{name: "lowest indexes first", pods: func(*batchv1.Job) []runtime.Object { return nil }, wantIndexes: []string{"0", "1"}},
		{name: "next pending index", pods: func(j *batchv1.Job) []runtime.Object {
			return []runtime.Object{idxPod(j, 0, 0, corev1.PodSucceeded), idxPod(j, 1, 1, corev1.PodRunning)}
		}, wantIndexes: []string{"2"}, wantCompleted: "0"},
		{name: "duplicate active index", pods: func(j *batchv1.Job) []runtime.Object {
			return []runtime.Object{idxPod(j, 0, 1, corev1.PodRunning), idxPod(j, 1, 1, corev1.PodRunning)}
		}, wantDeletes: 1},
		{name: "all indexes done", pods: func(j *batchv1.Job) []runtime.Object {
			return []runtime.Object{idxPod(j, 0, 0, corev1.PodSucceeded), idxPod(j, 1, 1, corev1.PodSucceeded),
				idxPod(j, 2, 2, corev1.PodSucceeded), idxPod(j, 3, 2, corev1.PodSucceeded), idxPod(j, 4, 3, corev1.PodSucceeded)}
		}, wantCompleted: "0-3", wantComplete: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := indexed()
			jc, client := newHarness(t, podcontroltest.NewClock(), append([]runtime.Object{j}, tc.pods(j)...)...)
			if err := jc.sync(context.Background(), "default/pi"); err != nil {
				t.Fatal(err)
			}
			var idx []string
			for _, a := range client.Actions() {
				ca, ok := a.(k8stesting.CreateAction)
				if !ok || a.GetVerb() != "create" {
					continue
				}
				p := ca.GetObject().(*corev1.Pod)
				i := p.Annotations[CompletionIndexAnnotation]
				idx = append(idx, i)
				if p.Labels[CompletionIndexAnnotation] != i || p.Spec.Hostname != "pi-"+i || p.GenerateName != "pi-"+i+"-" {
					t.Errorf("pod for index %s: labels %v hostname %q generateName %q", i, p.Labels, p.Spec.Hostname, p.GenerateName)
				}
				if env := p.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef == nil {
					t.Errorf("env %+v", env)
				}
			}
			slices.Sort(idx)
			if !slices.Equal(idx, tc.wantIndexes) {
				t.Errorf("created indexes %v, want %v", idx, tc.wantIndexes)
			}
			if d := count(client, "delete", "pods"); d != tc.wantDeletes {
				t.Errorf("%d deletions, want %d", d, tc.wantDeletes)
			}
			got, _ := client.BatchV1().Jobs("default").Get(context.Background(), "pi", metav1.GetOptions{})
			if got.Status.CompletedIndexes != tc.wantCompleted {
				t.Errorf("completedIndexes %q, want %q", got.Status.CompletedIndexes, tc.wantCompleted)
			}
			if c := getCondition(&got.Status, batchv1.JobComplete); (c != nil) != tc.wantComplete {
				t.Errorf("complete condition %+v, want %v", c, tc.wantComplete)
			}
			if tc.wantComplete && got.Status.Succeeded != 4 {
				t.Errorf("succeeded %d, want 4 (indexes, not pods)", got.Status.Succeeded)
			}
		})
	}
}
