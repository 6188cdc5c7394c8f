package cronjob

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/cron"
)

// ScheduledTimestampAnnotation is set on every Job a CronJob creates.
const ScheduledTimestampAnnotation = batchv1.CronJobScheduledTimestampAnnotation

// maxMissed is how many missed starts are tolerated before the
// TooManyMissedTimes warning, as upstream.
const maxMissed = 100

func (cc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := cc.cjLister.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cj := cached.DeepCopy()
	all, err := cc.jobs.Jobs(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.UID == cj.UID {
			jobs = append(jobs, j)
		}
	}
	changed := cc.reconcileActive(cj, jobs)
	requeue, syncChanged, syncErr := cc.syncSchedule(ctx, cj, jobs)
	if changed || syncChanged {
		if _, err := cc.Client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return errors.Join(syncErr, fmt.Errorf("updating status of cronjob %s: %w", key, err))
		}
	}
	cleanupErr := cc.cleanupHistory(ctx, cj, jobs)
	if requeue > 0 {
		cc.Queue.AddAfter(key, requeue)
	}
	return errors.Join(syncErr, cleanupErr)
}

func finished(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

// reconcileActive makes status.active the owned, unfinished jobs and
// records the last successful time.
func (cc *Controller) reconcileActive(cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	changed := false
	inActive := map[types.UID]bool{}
	for _, r := range cj.Status.Active {
		inActive[r.UID] = true
	}
	exists := map[types.UID]bool{}
	for _, j := range jobs {
		exists[j.UID] = true
		done, how := finished(j)
		switch {
		case inActive[j.UID] && done:
			removeActive(cj, j.UID)
			changed = true
			cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, how)
			if how == batchv1.JobComplete && j.Status.CompletionTime != nil &&
				(cj.Status.LastSuccessfulTime == nil || cj.Status.LastSuccessfulTime.Before(j.Status.CompletionTime)) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
			}
		case !inActive[j.UID] && !done:
			// Created but not recorded (a crash between the two):
			// it runs, so it counts for the concurrency policy.
			cj.Status.Active = append(cj.Status.Active, jobRef(j))
			changed = true
		}
	}
	for _, r := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
		if !exists[r.UID] {
			removeActive(cj, r.UID)
			changed = true
		}
	}
	return changed
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	var kept []corev1.ObjectReference
	for _, r := range cj.Status.Active {
		if r.UID != uid {
			kept = append(kept, r)
		}
	}
	cj.Status.Active = kept
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion}
}

// syncSchedule starts the job due now, if any, and returns when to look
// again and whether status changed.
func (cc *Controller) syncSchedule(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (time.Duration, bool, error) {
	if cj.DeletionTimestamp != nil {
		return 0, false, nil
	}
	loc := time.Local
	if cj.Spec.TimeZone != nil {
		l, err := time.LoadLocation(*cj.Spec.TimeZone)
		if err != nil {
			cc.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %v", *cj.Spec.TimeZone, err)
			return 0, false, nil
		}
		loc = l
	}
	sched, err := cron.Parse(cj.Spec.Schedule)
	if err != nil {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s: %v", cj.Spec.Schedule, err)
		return 0, false, nil
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return 0, false, nil
	}
	now := cc.Clock.Now().In(loc)
	next := func() time.Duration {
		n := sched.Next(now)
		if n.IsZero() {
			return 0
		}
		return n.Sub(now) + 100*time.Millisecond
	}
	scheduled, missed := mostRecent(cj, now, sched)
	if scheduled.IsZero() {
		return next(), false, nil
	}
	if missed > maxMissed {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next(), false, nil
	}
	name := fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
	for _, j := range jobs {
		if j.Name == name {
			return next(), false, nil // already started
		}
	}
	changed := false
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			cc.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return next(), false, nil
		}
	case batchv1.ReplaceConcurrent:
		for _, r := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			err := cc.Client.BatchV1().Jobs(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, changed, fmt.Errorf("replacing job %s/%s: %w", r.Namespace, r.Name, err)
			}
			cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", r.Name)
			removeActive(cj, r.UID)
			changed = true
		}
	}
	job := jobFromTemplate(cj, name, scheduled)
	created, err := cc.Client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync whose status write was lost; the
		// job informer will bring it into active.
		return next(), changed, nil
	case err != nil:
		cc.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, changed, fmt.Errorf("creating job %s/%s: %w", cj.Namespace, name, err)
	}
	cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	cj.Status.Active = append(cj.Status.Active, jobRef(created))
	cj.Status.LastScheduleTime = &metav1.Time{Time: scheduled}
	return next(), true, nil
}

// mostRecent returns the latest activation in (earliest, now] and how
// many activations there were; zero when none.
func mostRecent(cj *batchv1.CronJob, now time.Time, sched *cron.Schedule) (time.Time, int) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if dl := now.Add(-time.Duration(*d) * time.Second); dl.After(earliest) {
			earliest = dl
		}
	}
	earliest = earliest.In(now.Location())
	var last time.Time
	n := 0
	for t := sched.Next(earliest); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		last = t
		n++
		if n > maxMissed {
			// Too many to walk: find the latest one by looking back
			// from now in growing windows.
			for w := time.Hour; w < 6*366*24*time.Hour; w *= 2 {
				t2 := sched.Next(now.Add(-w))
				if t2.IsZero() || t2.After(now) {
					continue
				}
				for ; !t2.IsZero() && !t2.After(now); t2 = sched.Next(t2) {
					last = t2
				}
				break
			}
			return last, n + 1
		}
	}
	return last, n
}

func jobFromTemplate(cj *batchv1.CronJob, name string, scheduled time.Time) *batchv1.Job {
	annotations := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	annotations[ScheduledTimestampAnnotation] = scheduled.Format(time.RFC3339)
	lbls := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		lbls[k] = v
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cj.Namespace, Labels: lbls, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
}

// cleanupHistory deletes the oldest finished jobs beyond the limits.
func (cc *Controller) cleanupHistory(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) error {
	var ok, failed []*batchv1.Job
	for _, j := range jobs {
		if done, how := finished(j); done && j.DeletionTimestamp == nil {
			if how == batchv1.JobComplete {
				ok = append(ok, j)
			} else {
				failed = append(failed, j)
			}
		}
	}
	var errs []error
	for _, g := range []struct {
		jobs  []*batchv1.Job
		limit int32
	}{{ok, ptr.Deref(cj.Spec.SuccessfulJobsHistoryLimit, 3)}, {failed, ptr.Deref(cj.Spec.FailedJobsHistoryLimit, 1)}} {
		extra := len(g.jobs) - int(g.limit)
		if extra <= 0 {
			continue
		}
		sort.Slice(g.jobs, func(i, k int) bool { return startOf(g.jobs[i]).Before(startOf(g.jobs[k])) })
		for _, j := range g.jobs[:extra] {
			err := cc.Client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting old job %s/%s: %w", j.Namespace, j.Name, err))
				continue
			}
			cc.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
		}
	}
	return errors.Join(errs...)
}

func startOf(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}
