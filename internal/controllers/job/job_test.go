package job

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

func newHarness(t *testing.T, clk *clocktesting.FakeClock, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	jc, client, _ := podcontroltest.Harness(t, clk, New, objs...)
	if err := jc.served.RegisterOnce(); err != nil {
		t.Fatal(err)
	}
	return jc, client
}

func newJob(completions, parallelism *int32) *batchv1.Job {
	labels := map[string]string{ControllerUIDLabel: "job-uid"}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Completions: completions, Parallelism: parallelism, BackoffLimit: ptr.To(int32(6)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "perl"}}},
			},
		},
	}
}

func jobPod(j *batchv1.Job, i int, phase corev1.PodPhase, finished time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pi-%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("p%d", i)),
			Labels:          map[string]string{ControllerUIDLabel: "job-uid"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, controllerKind)}},
		Status: corev1.PodStatus{Phase: phase},
	}
	if phase == corev1.PodFailed || phase == corev1.PodSucceeded {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(finished)}}}}
	}
	return p
}

func count(c *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == "" {
			n++
		}
	}
	return n
}

func TestJobSync(t *testing.T) {
	clk := podcontroltest.NewClock()
	now := clk.Now()
	type pods func(j *batchv1.Job) []runtime.Object
	none := func(*batchv1.Job) []runtime.Object { return nil }
	cases := []struct {
		name                      string
		job                       *batchv1.Job
		pods                      pods
		wantCreate, wantDelete    int
		wantCond                  batchv1.JobConditionType
		wantReason                string
		wantActive, wantSucceeded int32
	}{
		{name: "starts parallelism pods", job: newJob(ptr.To(int32(5)), ptr.To(int32(2))), pods: none, wantCreate: 2},
		{name: "no more than remaining completions", job: newJob(ptr.To(int32(3)), ptr.To(int32(2))),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodSucceeded, now), jobPod(j, 1, corev1.PodSucceeded, now), jobPod(j, 2, corev1.PodRunning, now)}
			}, wantActive: 1, wantSucceeded: 2},
		{name: "complete", job: newJob(ptr.To(int32(2)), ptr.To(int32(2))),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodSucceeded, now), jobPod(j, 1, corev1.PodSucceeded, now)}
			}, wantCond: batchv1.JobComplete, wantReason: ReasonCompletionsReached, wantSucceeded: 2},
		{name: "work queue: one success, others finish", job: newJob(nil, ptr.To(int32(3))),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodSucceeded, now), jobPod(j, 1, corev1.PodRunning, now)}
			}, wantActive: 1, wantSucceeded: 1},
		{name: "work queue complete", job: newJob(nil, ptr.To(int32(3))),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodSucceeded, now), jobPod(j, 1, corev1.PodSucceeded, now)}
			}, wantCond: batchv1.JobComplete, wantReason: ReasonCompletionsReached, wantSucceeded: 2},
		{name: "backoff limit", job: newJob(ptr.To(int32(1)), ptr.To(int32(1))),
			pods: func(j *batchv1.Job) []runtime.Object {
				var out []runtime.Object
				for i := range 7 {
					out = append(out, jobPod(j, i, corev1.PodFailed, now.Add(-time.Hour)))
				}
				return append(out, jobPod(j, 9, corev1.PodRunning, now))
			}, wantDelete: 1, wantCond: batchv1.JobFailed, wantReason: ReasonBackoffLimitExceeded},
		{name: "failed pod waits out its backoff", job: newJob(ptr.To(int32(1)), ptr.To(int32(1))),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodFailed, now.Add(-5*time.Second))}
			}},
		{name: "failed pod replaced after backoff", job: newJob(ptr.To(int32(1)), ptr.To(int32(1))),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodFailed, now.Add(-11*time.Second))}
			}, wantCreate: 1},
		{name: "suspended deletes active", job: func() *batchv1.Job {
			j := newJob(ptr.To(int32(3)), ptr.To(int32(3)))
			j.Spec.Suspend = ptr.To(true)
			return j
		}(),
			pods: func(j *batchv1.Job) []runtime.Object {
				return []runtime.Object{jobPod(j, 0, corev1.PodRunning, now)}
			}, wantDelete: 1, wantCond: batchv1.JobSuspended, wantReason: ReasonJobSuspended},
		{name: "active deadline", job: func() *batchv1.Job {
			j := newJob(ptr.To(int32(3)), ptr.To(int32(1)))
			j.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
			j.Status.StartTime = &metav1.Time{Time: now.Add(-61 * time.Second)}
			return j
		}(), pods: func(j *batchv1.Job) []runtime.Object {
			return []runtime.Object{jobPod(j, 0, corev1.PodRunning, now)}
		}, wantDelete: 1, wantCond: batchv1.JobFailed, wantReason: ReasonDeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			jc, client := newHarness(t, clk, append([]runtime.Object{tc.job}, tc.pods(tc.job)...)...)
			if err := jc.sync(context.Background(), "default/pi"); err != nil {
				t.Fatal(err)
			}
			if c, d := count(client, "create", "pods"), count(client, "delete", "pods"); c != tc.wantCreate || d != tc.wantDelete {
				t.Errorf("%d creations %d deletions, want %d %d", c, d, tc.wantCreate, tc.wantDelete)
			}
			got, _ := client.BatchV1().Jobs("default").Get(context.Background(), "pi", metav1.GetOptions{})
			if tc.wantCond != "" {
				c := getCondition(&got.Status, tc.wantCond)
				if c == nil || c.Status != corev1.ConditionTrue || c.Reason != tc.wantReason {
					t.Errorf("conditions %+v, want %s/%s", got.Status.Conditions, tc.wantCond, tc.wantReason)
				}
			} else if len(got.Status.Conditions) != 0 {
				t.Errorf("unexpected conditions %+v", got.Status.Conditions)
			}
			if tc.wantCond == batchv1.JobComplete && got.Status.CompletionTime == nil {
				t.Error("no completionTime")
			}
			if got.Status.Active != tc.wantActive+int32(tc.wantCreate) || got.Status.Succeeded != tc.wantSucceeded {
				t.Errorf("status active %d succeeded %d", got.Status.Active, got.Status.Succeeded)
			}
			if got.Status.StartTime == nil && !suspended(tc.job) {
				t.Error("no startTime")
			}
		})
	}
}

func TestPodsCarryJobLabels(t *testing.T) {
	clk := podcontroltest.NewClock()
	jc, client := newHarness(t, clk, newJob(ptr.To(int32(1)), ptr.To(int32(1))))
	if err := jc.sync(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if ca, ok := a.(k8stesting.CreateAction); ok && a.GetVerb() == "create" {
			p := ca.GetObject().(*corev1.Pod)
			for _, k := range []string{JobNameLabel, "job-name", ControllerUIDLabel, "controller-uid"} {
				if p.Labels[k] == "" {
					t.Errorf("pod lacks label %s: %v", k, p.Labels)
				}
			}
			if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "Job" {
				t.Errorf("owner %+v", p.OwnerReferences)
			}
		}
	}
}

func TestTTLAfterFinished(t *testing.T) {
	clk := podcontroltest.NewClock()
	j := newJob(ptr.To(int32(1)), ptr.To(int32(1)))
	j.Spec.TTLSecondsAfterFinished = ptr.To(int32(100))
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clk.Now().Add(-50 * time.Second))}}
	jc, client := newHarness(t, clk, j)
	if err := jc.sync(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	if n := count(client, "delete", "jobs"); n != 0 {
		t.Fatalf("deleted before the TTL")
	}
	clk.Step(51 * time.Second)
	if err := jc.sync(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	var policy *metav1.DeletionPropagation
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.GetResource().Resource == "jobs" {
			policy = d.DeleteOptions.PropagationPolicy
		}
	}
	if policy == nil || *policy != metav1.DeletePropagationForeground {
		t.Errorf("job not deleted in the foreground after its TTL (policy %v)", policy)
	}
}

// TestRunStartsOnceServed runs the whole controller (informers, queue,
// workers) on a fake API that serves batch/v1.
func TestRunStartsOnceServed(t *testing.T) {
	clk := podcontroltest.NewClock()
	client := podcontroltest.NewClientset(clk)
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{{Name: "jobs"}}}}
	c := podcontroltest.NewContext(client, clk)
	jc, _ := New(c)
	t.Cleanup(jc.Queue.ShutDown) // the queue's goroutines start in New
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { jc.Run(ctx, 2); close(done) }()
	defer func() { cancel(); <-done; c.Informers.Shutdown() }()
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs("default").Create(ctx, newJob(ptr.To(int32(3)), ptr.To(int32(3))), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podcontroltest.Until(t, w, "the running controller creates the job's 3 pods", func() bool {
		pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return len(pods.Items) == 3
	})
}
