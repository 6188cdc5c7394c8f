package job

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
)

// CompletionIndexAnnotation (also set as a label) carries an Indexed Job
// pod's index; JOB_COMPLETION_INDEX is read from it, as upstream.
const CompletionIndexAnnotation = batchv1.JobCompletionIndexAnnotation

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// podIndex is pod's completion index, or -1 when missing or out of range.
func podIndex(p *corev1.Pod, completions int32) int {
	v, ok := p.Annotations[CompletionIndexAnnotation]
	if !ok {
		v, ok = p.Labels[CompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= int(completions) {
		return -1
	}
	return i
}

// succeededIndexes returns the sorted indexes with a succeeded pod.
func succeededIndexes(pods []*corev1.Pod, completions int32) []int {
	seen := map[int]bool{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded {
			if i := podIndex(p, completions); i >= 0 {
				seen[i] = true
			}
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// formatIndexes renders sorted indexes as upstream's completedIndexes:
// "1,3-5,7".
func formatIndexes(idx []int) string {
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// manageIndexed keeps one active pod for each of the lowest pending
// indexes, up to parallelism, and deletes active pods that duplicate an
// index, have none, or whose index already succeeded. It returns the
// change to the active count.
func (jc *Controller) manageIndexed(ctx context.Context, job *batchv1.Job, key string, active []*corev1.Pod, done []int, failed int32, lastFailure time.Time) (int, error) {
	completions := ptr.Deref(job.Spec.Completions, 1)
	succeeded := map[int]bool{}
	for _, i := range done {
		succeeded[i] = true
	}
	var extra []*corev1.Pod
	running := map[int]bool{}
	for _, p := range active {
		i := podIndex(p, completions)
		if i < 0 || succeeded[i] || running[i] {
			extra = append(extra, p)
			continue
		}
		running[i] = true
	}
	want := int(ptr.Deref(job.Spec.Parallelism, 1))
	if suspended(job) {
		want = 0
	}
	kept := len(active) - len(extra)
	if kept > want {
		// Parallelism lowered: drop the highest indexes.
		var keptPods []*corev1.Pod
		for _, p := range active {
			if i := podIndex(p, completions); i >= 0 && running[i] {
				keptPods = append(keptPods, p)
			}
		}
		sort.Slice(keptPods, func(a, b int) bool { return podIndex(keptPods[a], completions) > podIndex(keptPods[b], completions) })
		extra = append(extra, keptPods[:kept-want]...)
		kept = want
	}
	if len(extra) > 0 {
		return -len(extra), jc.deletePods(ctx, job, key, extra)
	}
	var pending []int
	for i := 0; i < int(completions) && len(pending) < want-kept; i++ {
		if !succeeded[i] && !running[i] {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return 0, nil
	}
	if wait := jc.backoffWait(failed, lastFailure); wait > 0 {
		jc.Queue.AddAfter(key, wait)
		return 0, nil
	}
	jc.exp.Expect(key, len(pending), nil)
	template := jc.podTemplate(job)
	ref := podcontrol.ControllerRef(job, controllerKind)
	next := make(chan int, len(pending))
	for _, i := range pending {
		next <- i
	}
	ok, err := podcontrol.SlowStartBatch(len(pending), podcontrol.SlowStartInitialBatch, func() error {
		i := <-next
		pod := podcontrol.PodFromTemplate(template, job, ref)
		idx := strconv.Itoa(i)
		pod.GenerateName = job.Name + "-" + idx + "-"
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[CompletionIndexAnnotation] = idx
		pod.Labels[CompletionIndexAnnotation] = idx
		if pod.Spec.Hostname == "" {
			pod.Spec.Hostname = job.Name + "-" + idx
		}
		addIndexEnv(&pod.Spec)
		_, err := podcontrol.CreatePod(ctx, jc.Client, jc.recorder, job, pod)
		if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	})
	for range len(pending) - ok {
		jc.exp.CreationObserved(key)
	}
	return ok, err
}

// addIndexEnv gives every container JOB_COMPLETION_INDEX from the pod's
// annotation (downward API), as upstream.
func addIndexEnv(spec *corev1.PodSpec) {
	env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + CompletionIndexAnnotation + "']"},
	}}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			has := false
			for _, e := range cs[i].Env {
				has = has || e.Name == env.Name
			}
			if !has {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
}
