package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/myriad-k8s/myriad/internal/sim"
)

// cronJobYAML runs every minute; its pods finish at once on hollow nodes.
const cronJobYAML = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: every-minute
  namespace: batch-e2e
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          annotations: {sim.myriad.io/run-seconds: "0.5"}
        spec:
          restartPolicy: Never
          containers:
          - name: tick
            image: busybox:1.36
`

// TestBatch runs Jobs and a CronJob through a real `myriad up` (the
// batch/v1 API, the Job, CronJob and garbage-collector controllers, the
// scheduler) with hollow nodes that run Job pods to Succeeded.
func TestBatch(t *testing.T) {
	srv, _ := startWithHollowNodes(t, "batch", 3, func(c *sim.Config) {
		c.JobRunTime = time.Second
	})

	c := srv.client(t)
	ctx := context.Background()
	const ns = "batch-e2e"
	srv.mustKubectl(t, "", "create", "namespace", ns)

	// The CronJob goes first: its first Job is due at the next minute
	// boundary, which the subtests below wait out meanwhile.
	srv.mustKubectl(t, cronJobYAML, "apply", "-f", "-")

	t.Run("job with completions 5 and parallelism 2 completes", func(t *testing.T) {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "five", Namespace: ns},
			Spec: batchv1.JobSpec{
				Completions: ptrTo(int32(5)),
				Parallelism: ptrTo(int32(2)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "work", Image: "busybox:1.36"}},
				}},
			},
		}
		w, err := c.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=five"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		created, err := c.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sel := created.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]
		if sel != string(created.UID) || created.Spec.Template.Labels[batchv1.JobNameLabel] != "five" ||
			*created.Spec.BackoffLimit != 6 || *created.Spec.CompletionMode != batchv1.NonIndexedCompletion {
			t.Fatalf("defaults: selector %v labels %v spec %+v", created.Spec.Selector, created.Spec.Template.Labels, created.Spec)
		}
		maxActive := int32(0)
		waitJob(t, c, ns, "five", 60*time.Second, func(j *batchv1.Job) bool {
			maxActive = max(maxActive, j.Status.Active)
			return hasCondition(j, batchv1.JobComplete)
		})
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "five", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Succeeded != 5 || j.Status.Failed != 0 || j.Status.CompletionTime == nil || maxActive > 2 {
			t.Fatalf("status %+v (max active seen %d)", j.Status, maxActive)
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=five"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName == "" {
				t.Errorf("pod %s: phase %s node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
		}
		if len(pods.Items) != 5 {
			t.Errorf("%d pods, want 5", len(pods.Items))
		}
		// The watch saw the Job created and then finished.
		var events []watch.EventType
		for ev := range w.ResultChan() {
			events = append(events, ev.Type)
			if j, ok := ev.Object.(*batchv1.Job); ok && hasCondition(j, batchv1.JobComplete) {
				break
			}
		}
		if len(events) < 2 || events[0] != watch.Added || events[len(events)-1] != watch.Modified {
			t.Errorf("watch events %v", events)
		}
		if out := srv.mustKubectl(t, "", "-n", ns, "describe", "job", "five"); !strings.Contains(out, "0 Active") ||
			!strings.Contains(out, "5 Succeeded") || !strings.Contains(out, "Completions:") {
			t.Errorf("describe job:\n%s", out)
		}
		// Field selector upstream supports on jobs.
		if out := srv.mustKubectl(t, "", "-n", ns, "get", "jobs", "--field-selector", "status.successful=5", "-o", "name"); strings.TrimSpace(out) != "job.batch/five" {
			t.Errorf("field selector status.successful=5: %q", out)
		}
	})

	t.Run("kubectl create, get and delete a job", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "-n", ns, "create", "job", "hello", "--image=busybox:1.36")
		if !strings.Contains(out, "job.batch/hello created") {
			t.Fatalf("create job: %s", out)
		}
		waitJob(t, c, ns, "hello", 60*time.Second, func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete) })
		out = srv.mustKubectl(t, "", "-n", ns, "get", "jobs", "hello")
		if fields := strings.Fields(firstLine(out)); strings.Join(fields, " ") != "NAME STATUS COMPLETIONS DURATION AGE" {
			t.Errorf("get jobs header: %q", out)
		}
		if row := strings.Fields(secondLine(out)); len(row) != 5 || row[0] != "hello" || row[1] != "Complete" || row[2] != "1/1" {
			t.Errorf("get jobs row: %q", out)
		}
		out = srv.mustKubectl(t, "", "-n", ns, "get", "jobs", "hello", "-o", "wide")
		if fields := strings.Fields(firstLine(out)); strings.Join(fields, " ") != "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR" ||
			!strings.Contains(out, "busybox:1.36") || !strings.Contains(out, batchv1.ControllerUidLabel+"=") {
			t.Errorf("get jobs -o wide: %q", out)
		}

		// kubectl deletes a Job in the background: the garbage collector
		// removes its pods.
		if n := countPods(t, c, ns, batchv1.JobNameLabel+"=hello"); n != 1 {
			t.Fatalf("%d pods before delete, want 1", n)
		}
		srv.mustKubectl(t, "", "-n", ns, "delete", "job", "hello")
		waitFor(t, 30*time.Second, func() bool { return countPods(t, c, ns, batchv1.JobNameLabel+"=hello") == 0 })
	})

	t.Run("apply twice, server-side apply and generateName", func(t *testing.T) {
		if out := srv.mustKubectl(t, cronJobYAML, "apply", "-f", "-"); !strings.Contains(out, "cronjob.batch/every-minute unchanged") {
			t.Errorf("second apply of the cronjob: %s", out)
		}
		jobYAML := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: ssa\n  namespace: " + ns +
			"\nspec:\n  suspend: true\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox:1.36\n"
		// Client-side apply twice leaves the generated selector and
		// labels alone.
		csa := strings.Replace(jobYAML, "name: ssa", "name: csa", 1)
		for _, want := range []string{"job.batch/csa created", "job.batch/csa unchanged"} {
			if out := srv.mustKubectl(t, csa, "apply", "-f", "-"); !strings.Contains(out, want) {
				t.Errorf("apply, want %q: %s", want, out)
			}
		}
		for i, want := range []string{"job.batch/ssa serverside-applied", "job.batch/ssa serverside-applied"} {
			if out := srv.mustKubectl(t, jobYAML, "apply", "--server-side", "-f", "-"); !strings.Contains(out, want) {
				t.Errorf("server-side apply %d: %s", i+1, out)
			}
		}
		if gen := srv.mustKubectl(t, "", "-n", ns, "get", "job", "ssa", "-o", "jsonpath={.metadata.generation}"); gen != "1" {
			t.Errorf("generation after applying the same job twice: %s", gen)
		}
		// The name is generated before the strategy copies it into the
		// job-name labels.
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-", Namespace: ns},
			Spec: batchv1.JobSpec{Suspend: ptrTo(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
			}}},
		}
		got, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Name, "gen-") || got.Spec.Template.Labels[batchv1.JobNameLabel] != got.Name || got.Spec.Template.Labels["job-name"] != got.Name {
			t.Errorf("generated job %s: template labels %v", got.Name, got.Spec.Template.Labels)
		}
	})

	t.Run("suspend, indexed and ttl", func(t *testing.T) {
		// "ssa" above was made suspended: no pods, the Suspended condition
		// and column; resumed, it runs.
		waitJob(t, c, ns, "ssa", 30*time.Second, func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobSuspended) })
		if row := strings.Fields(secondLine(srv.mustKubectl(t, "", "-n", ns, "get", "job", "ssa"))); len(row) < 2 || row[1] != "Suspended" {
			t.Errorf("suspended job row %v", row)
		}
		if n := countPods(t, c, ns, batchv1.JobNameLabel+"=ssa"); n != 0 {
			t.Errorf("suspended job has %d pods", n)
		}
		srv.mustKubectl(t, "", "-n", ns, "patch", "job", "ssa", "--type=merge", "-p", `{"spec":{"suspend":false}}`)
		waitJob(t, c, ns, "ssa", 60*time.Second, func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete) })

		mk := func(name string, mutate func(*batchv1.JobSpec)) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
				}},
			}}
			mutate(&j.Spec)
			if _, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		mk("indexed", func(s *batchv1.JobSpec) {
			s.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			s.Completions, s.Parallelism = ptrTo(int32(3)), ptrTo(int32(3))
		})
		// A finished Job with ttlSecondsAfterFinished 0 is deleted in the
		// foreground, its pods first.
		mk("ttl", func(s *batchv1.JobSpec) { s.TTLSecondsAfterFinished = ptrTo(int32(0)) })
		waitJob(t, c, ns, "indexed", 60*time.Second, func(j *batchv1.Job) bool {
			return hasCondition(j, batchv1.JobComplete) && j.Status.CompletedIndexes == "0-2"
		})
		waitFor(t, 60*time.Second, func() bool {
			_, err := c.BatchV1().Jobs(ns).Get(ctx, "ttl", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if n := countPods(t, c, ns, batchv1.JobNameLabel+"=ttl"); n != 0 {
			t.Errorf("%d pods left of the ttl job", n)
		}
	})

	t.Run("kubectl explain", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "explain", "cronjob.spec.schedule")
		if !strings.Contains(out, "KIND:") || !strings.Contains(out, "CronJob") || !strings.Contains(out, "schedule") || !strings.Contains(out, "<string>") {
			t.Errorf("explain cronjob.spec.schedule:\n%s", out)
		}
		out = srv.mustKubectl(t, "", "explain", "job.spec.completions")
		if !strings.Contains(out, "Job") || !strings.Contains(out, "<integer>") {
			t.Errorf("explain job.spec.completions:\n%s", out)
		}
	})

	t.Run("invalid schedule is a 422 on spec.schedule", func(t *testing.T) {
		bad := strings.NewReplacer("every-minute", "bad-schedule", `"* * * * *"`, `"61 * * * *"`).Replace(cronJobYAML)
		out, err := srv.kubectl(t, bad, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, `The CronJob "bad-schedule" is invalid`) || !strings.Contains(out, "spec.schedule: Invalid value") {
			t.Errorf("kubectl apply of a bad schedule: err %v\n%s", err, out)
		}
		out, err = srv.kubectl(t, "", "-n", ns, "create", "cronjob", "bad-cli", "--image=busybox:1.36", "--schedule=* * * *")
		if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, "spec.schedule: Invalid value") {
			t.Errorf("kubectl create cronjob with a 4-field schedule: err %v\n%s", err, out)
		}
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-zone", Namespace: ns},
			Spec: batchv1.CronJobSpec{
				Schedule: "0 0 * * *", TimeZone: ptrTo("Mars/Olympus"),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}}}},
			},
		}
		_, err = c.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !hasCause(err, "spec.timeZone") {
			t.Errorf("unknown time zone: %v", err)
		}
		cj.Spec.TimeZone, cj.Spec.Schedule = nil, "every day"
		_, err = c.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !hasCause(err, "spec.schedule") {
			t.Errorf("bad schedule: %v", err)
		}
	})

	t.Run("kubectl create job --from=cronjob", func(t *testing.T) {
		srv.mustKubectl(t, "", "-n", ns, "create", "job", "manual", "--from=cronjob/every-minute")
		waitJob(t, c, ns, "manual", 60*time.Second, func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete) })
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "manual", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "CronJob" || ref.Name != "every-minute" ||
			j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
			t.Errorf("manual job: owner %v annotations %v", j.OwnerReferences, j.Annotations)
		}
	})

	t.Run("cronjob runs a job on schedule", func(t *testing.T) {
		// At most a minute after the CronJob was made, plus scheduling.
		var scheduled string
		waitFor(t, 75*time.Second, func() bool {
			jobs, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs.Items {
				if _, ok := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; ok && hasCondition(&j, batchv1.JobComplete) {
					scheduled = j.Name
					return true
				}
			}
			return false
		})
		if !strings.HasPrefix(scheduled, "every-minute-") {
			t.Errorf("scheduled job %q", scheduled)
		}
		waitFor(t, 20*time.Second, func() bool {
			cj, err := c.BatchV1().CronJobs(ns).Get(ctx, "every-minute", metav1.GetOptions{})
			return err == nil && cj.Status.LastScheduleTime != nil && cj.Status.LastSuccessfulTime != nil
		})
		out := srv.mustKubectl(t, "", "-n", ns, "get", "cronjobs", "-o", "wide")
		if fields := strings.Fields(firstLine(out)); strings.Join(fields, " ") != "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE CONTAINERS IMAGES SELECTOR" ||
			!strings.Contains(out, "every-minute") || !strings.Contains(out, "<none>") {
			t.Errorf("get cronjobs -o wide:\n%s", out)
		}

		// Deleting the CronJob takes its Jobs, and their pods, with it.
		srv.mustKubectl(t, "", "-n", ns, "delete", "cronjob", "every-minute")
		waitFor(t, 30*time.Second, func() bool {
			jobs, err := c.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs.Items {
				if ref := metav1.GetControllerOf(&j); ref != nil && ref.Kind == "CronJob" {
					return false
				}
			}
			return countPods(t, c, ns, batchv1.JobNameLabel+"="+scheduled) == 0 && countPods(t, c, ns, batchv1.JobNameLabel+"=manual") == 0
		})
	})
}

func waitJob(t *testing.T, c kubernetes.Interface, ns, name string, timeout time.Duration, done func(*batchv1.Job) bool) {
	t.Helper()
	var last *batchv1.Job
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		j, err := c.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = j
			if done(j) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("job %s not done within %v: status %+v", name, timeout, last.Status)
	}
	t.Fatalf("job %s not found within %v", name, timeout)
}

func hasCondition(j *batchv1.Job, ct batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func hasCause(err error, field string) bool {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

func countPods(t *testing.T, c kubernetes.Interface, ns, selector string) int {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func secondLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return firstLine(rest)
}
