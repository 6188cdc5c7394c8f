package registry

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testCronJob(mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default", UID: "uid-c"},
		Spec: batchv1.CronJobSpec{
			Schedule:    "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: testJobTemplate()}},
		},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

func TestCronJobDefaults(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "cronjobs")
	cj := testCronJob(func(cj *batchv1.CronJob) { cj.Status.Active = []corev1.ObjectReference{{Name: "x"}} })
	wantErrs(t, create(r, cj))
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("cronjob defaults: %+v", s)
	}
	// The job template gets pod defaults only: Job defaults and the
	// selector belong to each Job the controller creates.
	js := s.JobTemplate.Spec
	if js.Completions != nil || js.Parallelism != nil || js.BackoffLimit != nil || js.Selector != nil || js.Template.Labels != nil {
		t.Errorf("job template got Job defaults: %+v", js)
	}
	if js.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("pod template not defaulted: %+v", js.Template.Spec)
	}
	if cj.Generation != 1 || len(cj.Status.Active) != 0 {
		t.Errorf("generation %d status %+v", cj.Generation, cj.Status)
	}
}

func TestCronJobValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "cronjobs")
	cases := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   []string
	}{
		{"valid", func(*batchv1.CronJob) {}, nil},
		{"descriptor", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@hourly" }, nil},
		{"names", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 9 * JAN-MAR MON-FRI" }, nil},
		{"time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptrTo("Europe/Paris") }, nil},
		{"no schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" }, []string{"Required value: spec.schedule"}},
		{"garbage schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "every minute" }, []string{"Invalid value: spec.schedule"}},
		{"minute out of range", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" }, []string{"Invalid value: spec.schedule"}},
		{"TZ in schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC * * * * *" }, []string{"Invalid value: spec.schedule"}},
		{"unknown time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptrTo("Mars/Olympus") }, []string{"Invalid value: spec.timeZone"}},
		{"bad time zone characters", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptrTo("Europe/../etc") }, []string{"Invalid value: spec.timeZone"}},
		{"empty time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptrTo("") }, []string{"Invalid value: spec.timeZone"}},
		{"local time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptrTo("Local") }, []string{"Invalid value: spec.timeZone"}},
		{"concurrency policy", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
			[]string{"Unsupported value: spec.concurrencyPolicy"}},
		{"negative limits", func(cj *batchv1.CronJob) {
			cj.Spec.StartingDeadlineSeconds = ptrTo(int64(-1))
			cj.Spec.SuccessfulJobsHistoryLimit = ptrTo(int32(-1))
			cj.Spec.FailedJobsHistoryLimit = ptrTo(int32(-1))
		}, []string{"Invalid value: spec.startingDeadlineSeconds", "Invalid value: spec.successfulJobsHistoryLimit", "Invalid value: spec.failedJobsHistoryLimit"}},
		{"template selector", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, []string{"Invalid value: spec.jobTemplate.spec.selector"}},
		{"template manual selector", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.ManualSelector = ptrTo(true) },
			[]string{"Unsupported value: spec.jobTemplate.spec.manualSelector"}},
		{"template restart policy", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = "" },
			[]string{"Required value: spec.jobTemplate.spec.template.spec.restartPolicy"}},
		{"template negative completions", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Completions = ptrTo(int32(-1)) },
			[]string{"Invalid value: spec.jobTemplate.spec.completions"}},
		{"name too long", func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("n", 53) }, []string{"Invalid value: metadata.name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantErrs(t, create(r, testCronJob(tc.mutate)), tc.want...) })
	}
}

func TestCronJobUpdateAndStatus(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "cronjobs")
	old := testCronJob()
	wantErrs(t, create(r, old))
	old.ResourceVersion = "1"
	old.Status.LastScheduleTime = &metav1.Time{Time: time.Unix(1000, 0)}

	cases := []struct {
		name    string
		mutate  func(*batchv1.CronJob)
		old     func(*batchv1.CronJob)
		want    []string
		wantGen int64
	}{
		{"schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@daily" }, nil, nil, 2},
		{"suspend", func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptrTo(true) }, nil, nil, 2},
		{"status ignored", func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = nil }, nil, nil, 1},
		{"bad schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * *" }, nil, []string{"Invalid value: spec.schedule"}, 2},
		// Names longer than 52 from before the limit stay updatable.
		{"long name kept", func(*batchv1.CronJob) {}, func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("n", 60) }, nil, 1},
		// An object that already had TZ= in its schedule keeps it.
		{"TZ kept", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" },
			func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC * * * * *" }, nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := old.DeepCopy()
			if tc.old != nil {
				tc.old(o)
			}
			cj := o.DeepCopy()
			tc.mutate(cj)
			wantErrs(t, update(r, cj, o), tc.want...)
			if cj.Generation != tc.wantGen || cj.Status.LastScheduleTime == nil {
				t.Errorf("generation %d, status %+v", cj.Generation, cj.Status)
			}
		})
	}

	cj := old.DeepCopy()
	cj.Spec.Schedule = "@yearly"
	cj.Status.Active = []corev1.ObjectReference{{Name: "nightly-1"}}
	wantErrs(t, updateStatus(r, cj, old))
	if cj.Spec.Schedule != old.Spec.Schedule || len(cj.Status.Active) != 1 {
		t.Errorf("status write: spec %+v status %+v", cj.Spec, cj.Status)
	}
}

func TestCronJobTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	reg, err := NewWithOptions(Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := mustLookup(t, reg, "batch", "cronjobs")
	if got := strings.Join(columnNames(r), ","); got != "Name,Schedule,Timezone,Suspend,Active,Last Schedule,Age,Containers*,Images*,Selector*" {
		t.Errorf("columns %s", got)
	}
	cases := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   map[string]interface{}
	}{
		{"new", func(*batchv1.CronJob) {}, map[string]interface{}{
			"Timezone": "<none>", "Suspend": "False", "Active": int64(0), "Last Schedule": "<none>", "Selector": "<none>"}},
		{"running", func(cj *batchv1.CronJob) {
			cj.Spec.TimeZone = ptrTo("Etc/UTC")
			cj.Spec.Suspend = ptrTo(true)
			cj.Status.Active = []corev1.ObjectReference{{Name: "a"}, {Name: "b"}}
			cj.Status.LastScheduleTime = &metav1.Time{Time: now.Add(-30 * time.Second)}
		}, map[string]interface{}{"Timezone": "Etc/UTC", "Suspend": "True", "Active": int64(2), "Last Schedule": "30s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cj := testCronJob()
			wantErrs(t, create(r, cj))
			cj.CreationTimestamp = metav1.Time{Time: now.Add(-2 * time.Hour)}
			tc.mutate(cj)
			row := cells(r, cj)
			for k, v := range tc.want {
				if row[k] != v {
					t.Errorf("%s = %v, want %v", k, row[k], v)
				}
			}
			if row["Name"] != "nightly" || row["Schedule"] != "*/5 * * * *" || row["Age"] != "120m" || row["Images"] != "busybox:1.36" {
				t.Errorf("row %v", row)
			}
		})
	}
}
