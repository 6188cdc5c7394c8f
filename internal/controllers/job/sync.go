package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Condition reasons, as upstream.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonCompletionsReached   = "CompletionsReached"
	ReasonJobSuspended         = "JobSuspended"
	ReasonJobResumed           = "JobResumed"
)

func (jc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := jc.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		jc.exp.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	job := cached.DeepCopy()
	if finished, at := isFinished(job); finished {
		return jc.ttlCleanup(ctx, job, at, key)
	}
	if job.Spec.Selector == nil {
		return nil // the API fills it in; an old object without one is left alone
	}
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil
	}
	all, err := podcontrol.PodsForOwner(jc.podInf, ns, job.UID)
	if err != nil {
		return err
	}
	pods, err := podcontrol.Claim(ctx, podcontrol.NewRefManager(job, controllerKind, selector,
		jc.Client.BatchV1().Jobs(ns).Get, jc.Client.CoreV1().Pods(ns).Patch), all)
	if err != nil {
		return err
	}

	var active []*corev1.Pod
	var succeeded, failed, ready int32
	var lastFailure time.Time
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		case p.Status.Phase == corev1.PodFailed:
			failed++
			lastFailure = later(lastFailure, finishedAt(p))
		case p.DeletionTimestamp == nil:
			active = append(active, p)
			if podcontrol.IsPodReady(p) {
				ready++
			}
		}
	}
	var doneIndexes []int
	if isIndexed(job) {
		// Indexed: an index counts once however many pods succeeded for it.
		doneIndexes = succeededIndexes(pods, ptr.Deref(job.Spec.Completions, 1))
		succeeded = int32(len(doneIndexes))
	}
	now := jc.Clock.Now()
	st := job.Status.DeepCopy()
	if st.StartTime == nil && !suspended(job) {
		st.StartTime = &metav1.Time{Time: now}
		if d := job.Spec.ActiveDeadlineSeconds; d != nil {
			jc.Queue.AddAfter(key, time.Duration(*d)*time.Second)
		}
	}

	var manageErr error
	var finishCond *batchv1.JobCondition
	completions := job.Spec.Completions
	switch {
	case failed > ptr.Deref(job.Spec.BackoffLimit, 6):
		finishCond = jc.condition(batchv1.JobFailed, ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
	case pastDeadline(job, st, now):
		finishCond = jc.condition(batchv1.JobFailed, ReasonDeadlineExceeded, "Job was active longer than specified deadline")
	case completions != nil && succeeded >= *completions,
		completions == nil && succeeded > 0 && len(active) == 0:
		finishCond = jc.condition(batchv1.JobComplete, ReasonCompletionsReached, "Reached expected number of succeeded pods")
	}
	if finishCond != nil {
		// Failing: active pods are deleted. Completing with
		// completions unset: none are active by the case above.
		manageErr = jc.deletePods(ctx, job, key, active)
		if finishCond.Type == batchv1.JobFailed {
			// SuccessCriteriaMet/FailureTarget precede the final
			// condition upstream; clients wait on Complete/Failed.
			setCondition(st, jc.condition(batchv1.JobFailureTarget, finishCond.Reason, finishCond.Message))
		} else {
			setCondition(st, jc.condition(batchv1.JobSuccessCriteriaMet, finishCond.Reason, finishCond.Message))
			st.CompletionTime = &metav1.Time{Time: now}
		}
		setCondition(st, finishCond)
		active = nil
	}
	activeCount := len(active)
	if finishCond == nil && jc.exp.Satisfied(key) {
		var delta int
		if isIndexed(job) {
			delta, manageErr = jc.manageIndexed(ctx, job, key, active, doneIndexes, failed, lastFailure)
		} else {
			delta, manageErr = jc.manage(ctx, job, key, active, succeeded, failed, lastFailure)
		}
		activeCount += delta
	}
	jc.suspendCondition(job, st)

	st.Active = int32(activeCount)
	st.Ready = ptr.To(ready)
	st.Succeeded = succeeded
	if isIndexed(job) {
		st.CompletedIndexes = formatIndexes(doneIndexes)
	}
	st.Failed = failed
	if err := jc.updateStatus(ctx, job, st); err != nil {
		return errors.Join(manageErr, err)
	}
	if finishCond != nil && job.Spec.TTLSecondsAfterFinished != nil {
		jc.Queue.AddAfter(key, time.Duration(*job.Spec.TTLSecondsAfterFinished)*time.Second)
	}
	return manageErr
}

func suspended(job *batchv1.Job) bool { return ptr.Deref(job.Spec.Suspend, false) }

func pastDeadline(job *batchv1.Job, st *batchv1.JobStatus, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil || suspended(job) {
		return false
	}
	return !now.Before(st.StartTime.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second))
}

// manage creates or deletes pods toward the wanted number active and
// returns the change it made to the active count.
func (jc *Controller) manage(ctx context.Context, job *batchv1.Job, key string, active []*corev1.Pod, succeeded, failed int32, lastFailure time.Time) (int, error) {
	want := ptr.Deref(job.Spec.Parallelism, 1)
	switch {
	case suspended(job):
		want = 0
	case job.Spec.Completions != nil:
		want = min(want, *job.Spec.Completions-succeeded)
	case succeeded > 0:
		// Work-queue mode: once one succeeded, start no more.
		want = min(want, int32(len(active)))
	}
	want = max(want, 0)
	diff := int(want) - len(active)
	if diff < 0 {
		victims := append([]*corev1.Pod(nil), active...)
		podcontrol.RankForDeletion(victims)
		return diff, jc.deletePods(ctx, job, key, victims[:-diff])
	}
	if diff == 0 {
		return 0, nil
	}
	if wait := jc.backoffWait(failed, lastFailure); wait > 0 {
		jc.Queue.AddAfter(key, wait)
		return 0, nil
	}
	jc.exp.Expect(key, diff, nil)
	template := jc.podTemplate(job)
	ref := podcontrol.ControllerRef(job, controllerKind)
	ok, err := podcontrol.SlowStartBatch(diff, podcontrol.SlowStartInitialBatch, func() error {
		_, err := podcontrol.CreatePod(ctx, jc.Client, jc.recorder, job, podcontrol.PodFromTemplate(template, job, ref))
		if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	})
	for range diff - ok {
		jc.exp.CreationObserved(key)
	}
	return ok, err
}

// backoffWait is how long re-creation must still wait after failures:
// 10 s doubling per failed pod, at most 6 min, from the last failure.
func (jc *Controller) backoffWait(failed int32, lastFailure time.Time) time.Duration {
	if failed == 0 || lastFailure.IsZero() {
		return 0
	}
	backoff := min(DefaultBackoff<<min(failed-1, 10), MaxBackoff)
	return lastFailure.Add(backoff).Sub(jc.Clock.Now())
}

// podTemplate is the job's template with the job-name and controller-uid
// labels the API would have added.
func (jc *Controller) podTemplate(job *batchv1.Job) *corev1.PodTemplateSpec {
	template := job.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		JobNameLabel: job.Name, legacyJobNameLabel: job.Name,
		ControllerUIDLabel: string(job.UID), legacyControllerUIDLabel: string(job.UID),
	} {
		if _, ok := template.Labels[k]; !ok {
			template.Labels[k] = v
		}
	}
	return template
}

func (jc *Controller) deletePods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i], _ = reconcile.Key(p)
	}
	jc.exp.Expect(key, 0, keys)
	return podcontrol.DeletePods(ctx, jc.Client, jc.recorder, job, pods, jc.exp, key)
}

func (jc *Controller) suspendCondition(job *batchv1.Job, st *batchv1.JobStatus) {
	cur := getCondition(st, batchv1.JobSuspended)
	switch {
	case suspended(job) && (cur == nil || cur.Status != corev1.ConditionTrue):
		setCondition(st, jc.condition(batchv1.JobSuspended, ReasonJobSuspended, "Job suspended"))
	case !suspended(job) && cur != nil && cur.Status == corev1.ConditionTrue:
		c := jc.condition(batchv1.JobSuspended, ReasonJobResumed, "Job resumed")
		c.Status = corev1.ConditionFalse
		setCondition(st, c)
		// The active deadline counts from the resume.
		st.StartTime = &metav1.Time{Time: jc.Clock.Now()}
	}
}

// ttlCleanup deletes a finished job ttlSecondsAfterFinished after it
// finished, re-reading it first in case the TTL was changed.
func (jc *Controller) ttlCleanup(ctx context.Context, job *batchv1.Job, finishedAt time.Time, key string) error {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil || finishedAt.IsZero() {
		return nil
	}
	expire := finishedAt.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if wait := expire.Sub(jc.Clock.Now()); wait > 0 {
		jc.Queue.AddAfter(key, wait)
		return nil
	}
	fresh, err := jc.ttlClient.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("re-reading job %s: %w", key, err)
	}
	if fresh.UID != job.UID || fresh.Spec.TTLSecondsAfterFinished == nil ||
		*fresh.Spec.TTLSecondsAfterFinished != *job.Spec.TTLSecondsAfterFinished {
		jc.Queue.Add(key)
		return nil
	}
	err = jc.ttlClient.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &job.UID, ResourceVersion: &fresh.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting finished job %s: %w", key, err)
	}
	return nil
}

func (jc *Controller) updateStatus(ctx context.Context, job *batchv1.Job, st *batchv1.JobStatus) error {
	if statusEqual(&job.Status, st) {
		return nil
	}
	job.Status = *st
	if _, err := jc.Client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

func statusEqual(a, b *batchv1.JobStatus) bool {
	if a.Active != b.Active || a.Succeeded != b.Succeeded || a.Failed != b.Failed || a.CompletedIndexes != b.CompletedIndexes ||
		ptr.Deref(a.Ready, -1) != ptr.Deref(b.Ready, -1) || !a.StartTime.Equal(b.StartTime) ||
		!a.CompletionTime.Equal(b.CompletionTime) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status || a.Conditions[i].Reason != b.Conditions[i].Reason {
			return false
		}
	}
	return true
}

func (jc *Controller) condition(t batchv1.JobConditionType, reason, msg string) *batchv1.JobCondition {
	now := metav1.NewTime(jc.Clock.Now())
	return &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
}

func getCondition(st *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func setCondition(st *batchv1.JobStatus, c *batchv1.JobCondition) {
	if cur := getCondition(st, c.Type); cur != nil {
		if cur.Status != c.Status || cur.Reason != c.Reason {
			*cur = *c
		}
		return
	}
	st.Conditions = append(st.Conditions, *c)
}

// isFinished reports whether job has a true Complete or Failed condition,
// and when.
func isFinished(job *batchv1.Job) (bool, time.Time) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// finishedAt is when a failed pod's containers ended, else its creation.
func finishedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			t = later(t, s.State.Terminated.FinishedAt.Time)
		}
	}
	if t.IsZero() {
		for _, c := range p.Status.Conditions {
			t = later(t, c.LastTransitionTime.Time)
		}
	}
	if t.IsZero() {
		t = p.CreationTimestamp.Time
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
