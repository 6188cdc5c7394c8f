package cronjob

import (
	"context"
	"fmt"
	"slices"
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
	cc, client, _ := podcontroltest.Harness(t, clk, New, objs...)
	if err := cc.served.RegisterOnce(); err != nil {
		t.Fatal(err)
	}
	return cc, client
}

// at is 2026-11-22 hh:mm UTC.
func at(hh, mm int) time.Time { return time.Date(2026, 11, 22, hh, mm, 0, 0, time.UTC) }

func newCronJob(schedule string, created time.Time) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "default", UID: "cj-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule, TimeZone: ptr.To("UTC"), ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "backup"}}}}},
			},
		},
	}
}

func ownedJob(cj *batchv1.CronJob, scheduled time.Time, cond batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("backup-%d", scheduled.Unix()/60), Namespace: "default", UID: types.UID(fmt.Sprintf("j%d", scheduled.Unix())),
		CreationTimestamp: metav1.NewTime(scheduled),
		OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
	}}
	j.Status.StartTime = &metav1.Time{Time: scheduled}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		j.Status.CompletionTime = &metav1.Time{Time: scheduled.Add(time.Minute)}
	}
	return j
}

func names(c *fake.Clientset, verb string) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetVerb() != verb || a.GetResource().Resource != "jobs" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.CreateAction:
			out = append(out, a.GetObject().(*batchv1.Job).Name)
		case k8stesting.DeleteAction:
			out = append(out, a.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func jobName(t time.Time) string { return fmt.Sprintf("backup-%d", t.Unix()/60) }

func TestCronJobSync(t *testing.T) {
	cases := []struct {
		name        string
		now         time.Time
		cj          func() *batchv1.CronJob
		jobs        func(cj *batchv1.CronJob) []runtime.Object
		wantCreate  []string
		wantDelete  []string
		wantActive  int
		wantLastRun time.Time
	}{
		{name: "due", now: at(8, 7),
			cj:         func() *batchv1.CronJob { return newCronJob("*/5 * * * *", at(8, 0)) },
			wantCreate: []string{jobName(at(8, 5))}, wantActive: 1, wantLastRun: at(8, 5)},
		{name: "not yet due", now: at(8, 4),
			cj: func() *batchv1.CronJob { return newCronJob("*/5 * * * *", at(8, 0)) }},
		{name: "already started", now: at(8, 7),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Status.LastScheduleTime = &metav1.Time{Time: at(8, 5)}
				return cj
			},
			jobs:       func(cj *batchv1.CronJob) []runtime.Object { return []runtime.Object{ownedJob(cj, at(8, 5), "")} },
			wantActive: 1}, // re-added to active from the job list
		{name: "forbid while running", now: at(8, 11),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
				cj.Status.LastScheduleTime = &metav1.Time{Time: at(8, 5)}
				return cj
			},
			jobs:       func(cj *batchv1.CronJob) []runtime.Object { return []runtime.Object{ownedJob(cj, at(8, 5), "")} },
			wantActive: 1},
		{name: "replace running", now: at(8, 11),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
				cj.Status.LastScheduleTime = &metav1.Time{Time: at(8, 5)}
				return cj
			},
			jobs:       func(cj *batchv1.CronJob) []runtime.Object { return []runtime.Object{ownedJob(cj, at(8, 5), "")} },
			wantCreate: []string{jobName(at(8, 10))}, wantDelete: []string{jobName(at(8, 5))}, wantActive: 1, wantLastRun: at(8, 10)},
		{name: "allow concurrent", now: at(8, 11),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Status.LastScheduleTime = &metav1.Time{Time: at(8, 5)}
				return cj
			},
			jobs:       func(cj *batchv1.CronJob) []runtime.Object { return []runtime.Object{ownedJob(cj, at(8, 5), "")} },
			wantCreate: []string{jobName(at(8, 10))}, wantActive: 2, wantLastRun: at(8, 10)},
		{name: "missed the starting deadline", now: at(8, 7),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Spec.StartingDeadlineSeconds = ptr.To(int64(60))
				return cj
			}},
		{name: "within the starting deadline", now: at(8, 7),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Spec.StartingDeadlineSeconds = ptr.To(int64(300))
				return cj
			},
			wantCreate: []string{jobName(at(8, 5))}, wantActive: 1, wantLastRun: at(8, 5)},
		{name: "suspended", now: at(8, 7),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/5 * * * *", at(8, 0))
				cj.Spec.Suspend = ptr.To(true)
				return cj
			}},
		{name: "many missed: only the latest runs", now: at(8, 0).Add(48 * time.Hour),
			cj:         func() *batchv1.CronJob { return newCronJob("* * * * *", at(8, 0)) },
			wantCreate: []string{jobName(at(8, 0).Add(48 * time.Hour))}, wantActive: 1, wantLastRun: at(8, 0).Add(48 * time.Hour)},
		{name: "finished jobs leave active, history trimmed", now: at(8, 59),
			cj: func() *batchv1.CronJob {
				cj := newCronJob("*/10 * * * *", at(7, 0))
				cj.Status.LastScheduleTime = &metav1.Time{Time: at(8, 50)}
				return cj
			},
			jobs: func(cj *batchv1.CronJob) []runtime.Object {
				var out []runtime.Object
				for m := 0; m <= 50; m += 10 {
					c := batchv1.JobComplete
					if m == 0 || m == 20 {
						c = batchv1.JobFailed
					}
					out = append(out, ownedJob(cj, at(8, m), c))
				}
				return out
			},
			// Complete: 10, 30, 40, 50 → keep 3, delete 10. Failed: 0, 20 → keep 1, delete 0.
			wantDelete: []string{jobName(at(8, 0)), jobName(at(8, 10))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(tc.now)
			cj := tc.cj()
			objs := []runtime.Object{cj}
			if tc.jobs != nil {
				objs = append(objs, tc.jobs(cj)...)
			}
			cc, client := newHarness(t, clk, objs...)
			if err := cc.sync(context.Background(), "default/backup"); err != nil {
				t.Fatal(err)
			}
			if got := names(client, "create"); !slices.Equal(got, tc.wantCreate) {
				t.Errorf("created %v, want %v", got, tc.wantCreate)
			}
			if got := names(client, "delete"); !slices.Equal(got, tc.wantDelete) {
				t.Errorf("deleted %v, want %v", got, tc.wantDelete)
			}
			got, _ := client.BatchV1().CronJobs("default").Get(context.Background(), "backup", metav1.GetOptions{})
			if len(got.Status.Active) != tc.wantActive {
				t.Errorf("active %v, want %d", got.Status.Active, tc.wantActive)
			}
			if !tc.wantLastRun.IsZero() && (got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(tc.wantLastRun)) {
				t.Errorf("lastScheduleTime %v, want %v", got.Status.LastScheduleTime, tc.wantLastRun)
			}
		})
	}
}

func TestCreatedJob(t *testing.T) {
	clk := clocktesting.NewFakeClock(at(8, 7))
	cj := newCronJob("*/5 * * * *", at(8, 0))
	cc, client := newHarness(t, clk, cj)
	if err := cc.sync(context.Background(), "default/backup"); err != nil {
		t.Fatal(err)
	}
	j, err := client.BatchV1().Jobs("default").Get(context.Background(), jobName(at(8, 5)), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Annotations[ScheduledTimestampAnnotation] != "2026-11-22T08:05:00Z" || j.Labels["app"] != "backup" {
		t.Errorf("annotations %v labels %v", j.Annotations, j.Labels)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "CronJob" || ref.UID != cj.UID {
		t.Errorf("owner %+v", j.OwnerReferences)
	}
}

func TestLastSuccessfulTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(at(8, 7))
	cj := newCronJob("*/5 * * * *", at(8, 0))
	cj.Status.LastScheduleTime = &metav1.Time{Time: at(8, 5)}
	done := ownedJob(cj, at(8, 5), batchv1.JobComplete)
	cj.Status.Active = []corev1.ObjectReference{jobRef(done)}
	cc, client := newHarness(t, clk, cj, done)
	if err := cc.sync(context.Background(), "default/backup"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.BatchV1().CronJobs("default").Get(context.Background(), "backup", metav1.GetOptions{})
	if len(got.Status.Active) != 0 || got.Status.LastSuccessfulTime == nil || !got.Status.LastSuccessfulTime.Time.Equal(at(8, 6)) {
		t.Errorf("status %+v", got.Status)
	}
}
