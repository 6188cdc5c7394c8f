package registry

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testJobTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "work", Image: "busybox:1.36"}},
		},
	}
}

// testJob is a Job as a client sends it (no selector, no labels); the
// server sets UID before the strategy runs.
func testJob(mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "uid-1"},
		Spec:       batchv1.JobSpec{Template: testJobTemplate()},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func TestJobDefaults(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "jobs")
	cases := []struct {
		name                string
		mutate              func(*batchv1.Job)
		completions, par    string
		backoff             int32
		wantJobLabels       map[string]string
		wantSelectorMatches map[string]string
	}{
		{"neither count set", func(*batchv1.Job) {}, "1", "1", 6, map[string]string{
			"job-name": "pi", "controller-uid": "uid-1", batchv1.JobNameLabel: "pi", batchv1.ControllerUidLabel: "uid-1"},
			map[string]string{batchv1.ControllerUidLabel: "uid-1"}},
		{"completions only", func(j *batchv1.Job) { j.Spec.Completions = ptrTo(int32(5)) }, "5", "1", 6, nil, nil},
		{"parallelism only", func(j *batchv1.Job) { j.Spec.Parallelism = ptrTo(int32(3)) }, "nil", "3", 6, nil, nil},
		{"backoff per index", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			j.Spec.Completions = ptrTo(int32(2))
			j.Spec.BackoffLimitPerIndex = ptrTo(int32(1))
		}, "2", "1", 1<<31 - 1, nil, nil},
		{"job labels from template", func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"app": "pi"} }, "1", "1", 6,
			map[string]string{"app": "pi"}, nil},
		{"own labels kept", func(j *batchv1.Job) {
			j.Labels = map[string]string{"team": "a"}
			j.Spec.Template.Labels = map[string]string{"app": "pi"}
		}, "1", "1", 6, map[string]string{"team": "a"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob(tc.mutate, func(j *batchv1.Job) { j.Status.Succeeded = 3 })
			wantErrs(t, create(r, j))
			s := j.Spec
			if got := ptrString(s.Completions); got != tc.completions || ptrString(s.Parallelism) != tc.par || *s.BackoffLimit != tc.backoff {
				t.Errorf("completions %s parallelism %s backoffLimit %d", got, ptrString(s.Parallelism), *s.BackoffLimit)
			}
			if *s.Suspend || *s.ManualSelector || *s.CompletionMode == "" || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed {
				t.Errorf("suspend %v manualSelector %v completionMode %v podReplacementPolicy %v", *s.Suspend, *s.ManualSelector, *s.CompletionMode, *s.PodReplacementPolicy)
			}
			// The generated selector and the labels it relies on.
			for k, v := range map[string]string{"job-name": "pi", "controller-uid": "uid-1", batchv1.JobNameLabel: "pi", batchv1.ControllerUidLabel: "uid-1"} {
				if s.Template.Labels[k] != v {
					t.Errorf("template label %s = %q, want %q", k, s.Template.Labels[k], v)
				}
			}
			if len(s.Selector.MatchLabels) != 1 || s.Selector.MatchLabels[batchv1.ControllerUidLabel] != "uid-1" {
				t.Errorf("selector %v", s.Selector)
			}
			if tc.wantJobLabels != nil && !equalLabels(j.Labels, tc.wantJobLabels) {
				t.Errorf("job labels %v, want %v", j.Labels, tc.wantJobLabels)
			}
			if s.Template.Spec.DNSPolicy != corev1.DNSClusterFirst || s.Template.Spec.Containers[0].TerminationMessagePath == "" {
				t.Errorf("template not defaulted: %+v", s.Template.Spec)
			}
			if j.Generation != 1 || j.Status.Succeeded != 0 {
				t.Errorf("generation %d, status %+v", j.Generation, j.Status)
			}
		})
	}
}

func ptrString(p *int32) string {
	if p == nil {
		return "nil"
	}
	return strconv.Itoa(int(*p))
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestJobManualSelector(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "jobs")
	j := testJob(func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptrTo(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		j.Spec.Template.Labels = map[string]string{"app": "pi"}
	})
	wantErrs(t, create(r, j))
	if len(j.Spec.Template.Labels) != 1 || len(j.Spec.Selector.MatchLabels) != 1 {
		t.Errorf("manual selector changed: labels %v selector %v", j.Spec.Template.Labels, j.Spec.Selector)
	}
}

func TestJobValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "jobs")
	cases := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"valid", func(*batchv1.Job) {}, nil},
		{"restart policy unset", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			[]string{"Required value: spec.template.spec.restartPolicy"}},
		{"restart policy always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]string{"Required value: spec.template.spec.restartPolicy"}},
		{"negative counts", func(j *batchv1.Job) {
			j.Spec.Completions = ptrTo(int32(-1))
			j.Spec.Parallelism = ptrTo(int32(-2))
			j.Spec.BackoffLimit = ptrTo(int32(-3))
			j.Spec.ActiveDeadlineSeconds = ptrTo(int64(-4))
			j.Spec.TTLSecondsAfterFinished = ptrTo(int32(-5))
		}, []string{"Invalid value: spec.completions", "Invalid value: spec.parallelism", "Invalid value: spec.backoffLimit",
			"Invalid value: spec.activeDeadlineSeconds", "Invalid value: spec.ttlSecondsAfterFinished"}},
		{"completion mode", func(j *batchv1.Job) { j.Spec.CompletionMode = ptrTo(batchv1.CompletionMode("Sometimes")) },
			[]string{"Unsupported value: spec.completionMode"}},
		{"indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptrTo(int32(2))
		}, []string{"Required value: spec.completions"}},
		{"backoff per index needs indexed", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptrTo(int32(1)) },
			[]string{"Invalid value: spec.backoffLimitPerIndex"}},
		{"conflicting job-name label", func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"job-name": "other"} },
			[]string{"Invalid value: spec.template.metadata.labels[job-name]"}},
		{"foreign selector", func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "someone-else"}}
		}, []string{"Invalid value: spec.selector", "Invalid value: spec.template.metadata.labels"}},
		{"manual selector not matching", func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptrTo(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		}, []string{"Invalid value: spec.template.metadata.labels"}},
		{"manual without selector", func(j *batchv1.Job) { j.Spec.ManualSelector = ptrTo(true) },
			[]string{"Required value: spec.selector"}},
		{"no image", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"Required value: spec.template.spec.containers[0].image"}},
		{"pod failure policy", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 42}}},
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}},
			}}
		}, nil},
		{"bad pod failure policy", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: "Explode", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptrTo("nope"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3, 0, 3}}},
				{Action: batchv1.PodFailurePolicyActionFailIndex},
			}}
		}, []string{
			"Unsupported value: spec.podFailurePolicy.rules[0].action", "Invalid value: spec.podFailurePolicy.rules[0].onExitCodes.containerName",
			"Invalid value: spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "Duplicate value: spec.podFailurePolicy.rules[0].onExitCodes.values[2]",
			"Invalid value: spec.podFailurePolicy.rules[0].onExitCodes.values",
			"Invalid value: spec.podFailurePolicy.rules[1].action", "Invalid value: spec.podFailurePolicy.rules[1]",
			"Invalid value: spec.template.spec.restartPolicy",
		}},
		{"success policy", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			j.Spec.Completions = ptrTo(int32(10))
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptrTo("0-2,5"), SucceededCount: ptrTo(int32(3))}}}
		}, nil},
		{"bad success policy", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			j.Spec.Completions = ptrTo(int32(10))
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptrTo("0-2"), SucceededCount: ptrTo(int32(4))}, {SucceededIndexes: ptrTo("3,1")}, {SucceededIndexes: ptrTo("10")}, {},
			}}
		}, []string{"Invalid value: spec.successPolicy.rules[0].succeededCount", "Invalid value: spec.successPolicy.rules[1].succeededIndexes",
			"Invalid value: spec.successPolicy.rules[2].succeededIndexes", "Required value: spec.successPolicy.rules[3]"}},
		{"success policy needs indexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptrTo(int32(1))}}}
		}, []string{"Invalid value: spec.completionMode"}},
		{"name too long for the job-name label", func(j *batchv1.Job) { j.Name = strings.Repeat("a", 64) },
			[]string{"Invalid value: spec.template.metadata.labels", "Invalid value: spec.template.metadata.labels"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantErrs(t, create(r, testJob(tc.mutate)), tc.want...) })
	}
}

func TestJobUpdateAndStatus(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "jobs")
	old := testJob(func(j *batchv1.Job) { j.Spec.Completions = ptrTo(int32(5)) })
	wantErrs(t, create(r, old))
	old.ResourceVersion = "1"
	old.Status.Succeeded = 2
	old.Status.StartTime = &metav1.Time{Time: time.Unix(1000, 0)}

	cases := []struct {
		name    string
		mutate  func(*batchv1.Job)
		want    []string
		wantGen int64
	}{
		{"labels", func(j *batchv1.Job) { j.Labels = map[string]string{"x": "y"} }, nil, 1},
		{"parallelism", func(j *batchv1.Job) { j.Spec.Parallelism = ptrTo(int32(3)) }, nil, 2},
		{"suspend", func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(true) }, nil, 2},
		{"status ignored", func(j *batchv1.Job) { j.Status.Succeeded = 9 }, nil, 1},
		{"completions immutable", func(j *batchv1.Job) { j.Spec.Completions = ptrTo(int32(6)) },
			[]string{"Invalid value: spec.completions"}, 2},
		{"template immutable", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "busybox:2" },
			[]string{"Invalid value: spec.template"}, 2},
		{"selector immutable", func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["job-name"] = "pi" },
			[]string{"Invalid value: spec.selector"}, 2},
		{"completion mode immutable", func(j *batchv1.Job) { j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion) },
			[]string{"Invalid value: spec.completionMode"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := old.DeepCopy()
			tc.mutate(j)
			wantErrs(t, update(r, j, old), tc.want...)
			if j.Generation != tc.wantGen || j.Status.Succeeded != 2 {
				t.Errorf("generation %d, status %+v", j.Generation, j.Status)
			}
		})
	}

	t.Run("scheduling directives of a suspended job that never started", func(t *testing.T) {
		sus := testJob(func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(true) })
		wantErrs(t, create(r, sus))
		sus.ResourceVersion = "1"
		j := sus.DeepCopy()
		j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		j.Spec.Template.Annotations = map[string]string{"a": "b"}
		// The generated labels are checked on create only, as upstream.
		delete(j.Spec.Template.Labels, "job-name")
		wantErrs(t, update(r, j, sus))
		j.Spec.Template.Spec.Containers[0].Image = "other"
		wantErrs(t, update(r, j, sus), "Invalid value: spec.template")
	})

	t.Run("status write keeps spec", func(t *testing.T) {
		j := old.DeepCopy()
		j.Spec.Parallelism = ptrTo(int32(7))
		j.Status.Succeeded = 5
		j.Status.Active = -1
		wantErrs(t, updateStatus(r, j, old), "Invalid value: status.active")
		if *j.Spec.Parallelism != 1 || j.Status.Succeeded != 5 {
			t.Errorf("spec %+v status %+v", j.Spec, j.Status)
		}
	})
}

func TestJobFieldsAndTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	reg, err := NewWithOptions(Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := mustLookup(t, reg, "batch", "jobs")
	if got := strings.Join(columnNames(r), ","); got != "Name,Status,Completions,Duration,Age,Containers*,Images*,Selector*" {
		t.Errorf("columns %s", got)
	}
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }
	cond := func(t batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
	}
	cases := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   map[string]interface{}
	}{
		{"pending", func(*batchv1.Job) {}, map[string]interface{}{"Status": "Running", "Completions": "0/1", "Duration": ""}},
		{"running", func(j *batchv1.Job) {
			j.Spec.Completions = ptrTo(int32(5))
			j.Status.Succeeded = 2
			j.Status.StartTime = at(90 * time.Second)
		}, map[string]interface{}{"Status": "Running", "Completions": "2/5", "Duration": "90s"}},
		{"complete", func(j *batchv1.Job) {
			j.Spec.Completions = ptrTo(int32(5))
			j.Status.Succeeded = 5
			j.Status.StartTime = at(10 * time.Minute)
			j.Status.CompletionTime = at(9 * time.Minute)
			j.Status.Conditions = cond(batchv1.JobComplete)
		}, map[string]interface{}{"Status": "Complete", "Completions": "5/5", "Duration": "60s"}},
		{"work queue", func(j *batchv1.Job) {
			j.Spec.Completions = nil
			j.Spec.Parallelism = ptrTo(int32(3))
			j.Status.Succeeded = 1
		}, map[string]interface{}{"Completions": "1/1 of 3"}},
		{"failed", func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobFailed) }, map[string]interface{}{"Status": "Failed"}},
		{"suspended", func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobSuspended) }, map[string]interface{}{"Status": "Suspended"}},
		{"terminating", func(j *batchv1.Job) { j.DeletionTimestamp = at(0) }, map[string]interface{}{"Status": "Terminating"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			wantErrs(t, create(r, j))
			j.CreationTimestamp = metav1.Time{Time: now.Add(-time.Hour)}
			tc.mutate(j)
			row := cells(r, j)
			for k, v := range tc.want {
				if row[k] != v {
					t.Errorf("%s = %v, want %v", k, row[k], v)
				}
			}
			if row["Name"] != "pi" || row["Age"] != "60m" || row["Containers"] != "work" || row["Images"] != "busybox:1.36" ||
				row["Selector"] != batchv1.ControllerUidLabel+"=uid-1" {
				t.Errorf("row %v", row)
			}
		})
	}

	j := testJob()
	j.Status.Succeeded = 4
	if got := r.SelectableFields(j); got["status.successful"] != "4" {
		t.Errorf("selectable fields %v", got)
	}
}

// A generated name redrawn after a collision carries the job-name labels
// with it (the API server calls Rename).
func TestJobRename(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "batch", "jobs")
	j := testJob(func(j *batchv1.Job) { j.Name, j.GenerateName = "gen-aaaaa", "gen-" })
	wantErrs(t, create(r, j))
	j.Name = "gen-bbbbb"
	wantErrs(t, r.Strategy.Validate(context.Background(), j), "Invalid value: spec.template.metadata.labels[batch.kubernetes.io/job-name]",
		"Invalid value: spec.template.metadata.labels[job-name]")
	r.Strategy.(Renamer).Rename(j, "gen-aaaaa")
	wantErrs(t, r.Strategy.Validate(context.Background(), j))
	for _, m := range []map[string]string{j.Labels, j.Spec.Template.Labels} {
		if m["job-name"] != "gen-bbbbb" || m[batchv1.JobNameLabel] != "gen-bbbbb" {
			t.Errorf("labels after rename: %v", m)
		}
	}
}
