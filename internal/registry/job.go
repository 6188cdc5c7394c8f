package registry

import (
	"context"
	"fmt"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Legacy pod-template labels upstream's job strategy still writes next to
// the batch.kubernetes.io/ ones (batchv1.JobNameLabel, ControllerUidLabel).
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// maxParallelismForIndexedJob is upstream's limit on an Indexed Job's
// parallelism.
const maxParallelismForIndexedJob = 100000

func jobResource(c clock) *Resource {
	gv := v1(batchGroup)
	s := strategy[*batchv1.Job]{behavior[*batchv1.Job]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *batchv1.Job) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(j *batchv1.Job) { j.Status = batchv1.JobStatus{} },
		keepStatus:  func(obj, old *batchv1.Job) { obj.Status = old.Status },
		keepSpec:    func(obj, old *batchv1.Job) { obj.Spec = old.Spec },
		defaults:    defaultJob,
		// The selector is generated on create only, as upstream's
		// PrepareForCreate does: the object's UID and name are known by
		// then.
		prepareCreate: func(j *batchv1.Job) {
			generateJobSelector(j)
			// Upstream defaults again whenever it decodes a stored Job,
			// so a Job without labels shows its template's, generated
			// ones included (kubectl describe job lists them). Invalid
			// ones are left for validation to report on the template
			// alone, as upstream's create does.
			tl := j.Spec.Template.Labels
			if len(j.Labels) == 0 && tl != nil && len(metav1validation.ValidateLabels(tl, field.NewPath("labels"))) == 0 {
				j.Labels = copyLabels(j.Spec.Template.Labels)
			}
		},
		// Create adds its own rules (jobStrategy.Validate).
		validate: func(j *batchv1.Job) field.ErrorList {
			return validateJobSpec(&j.Spec, field.NewPath("spec"))
		},
		validateUpdate: validateJobUpdate,
		validateStatus: validateJobStatus,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Job",
		Resource:         "jobs",
		SingularName:     "job",
		Namespaced:       true,
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &batchv1.Job{} },
		NewList:          func() runtime.Object { return &batchv1.JobList{} },
		Strategy:         jobStrategy{s},
		Status:           statusOf(s),
		SelectableFields: func(o runtime.Object) fields.Set { return jobFields(o.(*batchv1.Job)) },
		Table:            jobTable(c),
		StorageKeyPrefix: storagePrefix(gv, "jobs"),
	}
}

// jobStrategy is the generic strategy plus the create-only checks
// (Validate) and Rename: the job-name labels PrepareForCreate wrote follow
// a generated name that had to be redrawn.
type jobStrategy struct{ strategy[*batchv1.Job] }

var _ Renamer = jobStrategy{}

// Rename rewrites the job-name labels (template and Job) that carry
// oldName, as preparing the Job afresh under its new name would have.
func (jobStrategy) Rename(o runtime.Object, oldName string) {
	j := o.(*batchv1.Job)
	for _, m := range []map[string]string{j.Labels, j.Spec.Template.Labels} {
		for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
			if v, ok := m[k]; ok && v == oldName {
				m[k] = j.Name
			}
		}
	}
}

// defaultJob is batch/v1 SetDefaults_Job plus the template's pod defaults.
func defaultJob(j *batchv1.Job) {
	sp := &j.Spec
	// Neither set: a non-parallel job, one pod to completion.
	if sp.Completions == nil && sp.Parallelism == nil {
		sp.Completions = ptrTo(int32(1))
		sp.Parallelism = ptrTo(int32(1))
	}
	if sp.Parallelism == nil {
		sp.Parallelism = ptrTo(int32(1))
	}
	if sp.BackoffLimit == nil {
		if sp.BackoffLimitPerIndex != nil {
			sp.BackoffLimit = ptrTo(int32(math.MaxInt32))
		} else {
			sp.BackoffLimit = ptrTo(int32(6))
		}
	}
	if len(j.Labels) == 0 && j.Spec.Template.Labels != nil {
		j.Labels = copyLabels(j.Spec.Template.Labels)
	}
	if sp.CompletionMode == nil {
		sp.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	}
	if sp.Suspend == nil {
		sp.Suspend = ptrTo(false)
	}
	if pfp := sp.PodFailurePolicy; pfp != nil {
		for i := range pfp.Rules {
			for k := range pfp.Rules[i].OnPodConditions {
				if pfp.Rules[i].OnPodConditions[k].Status == "" {
					pfp.Rules[i].OnPodConditions[k].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if sp.PodReplacementPolicy == nil {
		if sp.PodFailurePolicy != nil {
			sp.PodReplacementPolicy = ptrTo(batchv1.Failed)
		} else {
			sp.PodReplacementPolicy = ptrTo(batchv1.TerminatingOrFailed)
		}
	}
	if sp.ManualSelector == nil {
		sp.ManualSelector = ptrTo(false)
	}
	defaultPodTemplate(&sp.Template)
}

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// generateJobSelector is upstream's generateSelector: unless the user asked
// for a manual selector, the template gets the job-name and controller-uid
// labels (both forms; a label the user already set is left for validation
// to judge) and the selector matches batch.kubernetes.io/controller-uid,
// which is unique to this Job.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		legacyJobNameLabel: j.Name, batchv1.JobNameLabel: j.Name,
		legacyControllerUIDLabel: string(j.UID), batchv1.ControllerUidLabel: string(j.UID),
	} {
		if _, ok := j.Spec.Template.Labels[k]; !ok {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// Validate is upstream's ValidateJob: the spec rules every write checks,
// plus, on create only, that the generated selector and labels are the
// Job's own and that an Indexed Job's pod hostnames will be valid.
func (s jobStrategy) Validate(ctx context.Context, o runtime.Object) field.ErrorList {
	j := o.(*batchv1.Job)
	errs := s.strategy.Validate(ctx, o)
	errs = append(errs, validateGeneratedSelector(j)...)
	// An Indexed Job's pods are named and hostnamed "<job>-<index>".
	if m := j.Spec.CompletionMode; m != nil && *m == batchv1.IndexedCompletion && j.Spec.Completions != nil && *j.Spec.Completions > 0 {
		host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if len(validateDNS1123Label(host, field.NewPath("x"))) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

// validateGeneratedSelector checks that a generated selector and the
// template labels generateJobSelector wrote are still the Job's own.
func validateGeneratedSelector(j *batchv1.Job) field.ErrorList {
	var errs field.ErrorList
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector || j.Spec.Template.Labels == nil || j.Spec.Selector == nil {
		return nil
	}
	if j.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	mp := field.NewPath("spec", "template", "metadata")
	for _, l := range []struct{ key, want string }{
		{legacyControllerUIDLabel, string(j.UID)}, {legacyJobNameLabel, j.Name},
		{batchv1.ControllerUidLabel, string(j.UID)}, {batchv1.JobNameLabel, j.Name},
	} {
		errs = append(errs, validateHasLabel(j.Spec.Template.Labels, mp, l.key, l.want)...)
	}
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err == nil && !sel.Matches(labels.Set{batchv1.ControllerUidLabel: string(j.UID)}) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateHasLabel is upstream's ValidateHasLabel.
func validateHasLabel(lbls map[string]string, p *field.Path, key, want string) field.ErrorList {
	lp := p.Child("labels").Key(key)
	got, ok := lbls[key]
	switch {
	case !ok:
		return field.ErrorList{field.Required(lp, want)}
	case got != want:
		return field.ErrorList{field.Invalid(lp, lbls, "must be '"+want+"'")}
	}
	return nil
}

// validateJobSpec is upstream's ValidateJobSpec: the template rules plus a
// non-empty selector matching the template.
func validateJobSpec(sp *batchv1.JobSpec, p *field.Path) field.ErrorList {
	errs := validateJobTemplateRules(sp, p)
	selPath := p.Child("selector")
	if sp.Selector == nil {
		return append(errs, field.Required(selPath, ""))
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(sp.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
	if sel, err := metav1.LabelSelectorAsSelector(sp.Selector); err == nil {
		if sel.Empty() {
			errs = append(errs, field.Required(selPath, ""))
		}
		if !sel.Matches(labels.Set(sp.Template.Labels)) {
			errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), sp.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	return errs
}

// validateJobTemplateRules is upstream's validateJobSpec, shared by Jobs
// and a CronJob's jobTemplate: counts, completion mode and the pod
// template, whose restartPolicy must be OnFailure or Never.
func validateJobTemplateRules(sp *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    *int32
	}{
		{"parallelism", sp.Parallelism}, {"completions", sp.Completions}, {"backoffLimit", sp.BackoffLimit},
		{"ttlSecondsAfterFinished", sp.TTLSecondsAfterFinished}, {"backoffLimitPerIndex", sp.BackoffLimitPerIndex}, {"maxFailedIndexes", sp.MaxFailedIndexes},
	} {
		if f.v != nil {
			errs = append(errs, validateNonnegative(*f.v, p.Child(f.name))...)
		}
	}
	if d := sp.ActiveDeadlineSeconds; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, p.Child("activeDeadlineSeconds"))...)
	}
	indexed := false
	if m := sp.CompletionMode; m != nil {
		errs = append(errs, validateOneOf(*m, p.Child("completionMode"), batchv1.NonIndexedCompletion, batchv1.IndexedCompletion)...)
		indexed = *m == batchv1.IndexedCompletion
	}
	if indexed {
		if sp.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
		}
		if sp.Parallelism != nil && *sp.Parallelism > maxParallelismForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *sp.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxParallelismForIndexedJob)))
		}
	} else {
		if sp.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *sp.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if sp.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *sp.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if sp.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(sp, p.Child("podFailurePolicy"))...)
	}
	if sp.SuccessPolicy != nil {
		errs = append(errs, validateSuccessPolicy(sp, p)...)
	}
	if rp := sp.PodReplacementPolicy; rp != nil {
		if sp.PodFailurePolicy != nil && *rp != batchv1.Failed {
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), *rp, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		} else {
			errs = append(errs, validateOneOf(*rp, p.Child("podReplacementPolicy"), batchv1.Failed, batchv1.TerminatingOrFailed)...)
		}
	}

	tp := p.Child("template")
	mp := tp.Child("metadata")
	errs = append(errs, metav1validation.ValidateLabels(sp.Template.Labels, mp.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(sp.Template.Annotations, mp.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&sp.Template.Spec, tp.Child("spec"))...)
	// The template's restartPolicy was defaulted to Always when unset, so
	// both count as missing, as upstream.
	rpPath := tp.Child("spec", "restartPolicy")
	switch rp := sp.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(rpPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		// validatePodSpec has already reported the unsupported value.
	case sp.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rpPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// validateJobUpdate: the selector, completion mode and the policies are
// immutable; completions too, except an Indexed Job's changed together with
// parallelism (elastic indexed jobs); the template too, except the
// scheduling directives of a suspended Job that never started.
func validateJobUpdate(obj, old *batchv1.Job) field.ErrorList {
	sp, osp := &obj.Spec, &old.Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateJobCompletionsUpdate(sp, osp, p.Child("completions"))...)
	errs = append(errs, immutable(sp.Selector, osp.Selector, p.Child("selector"))...)

	oldTemplate := &osp.Template
	if ptrDeref(osp.Suspend) && old.Status.StartTime == nil {
		oldTemplate = osp.Template.DeepCopy()
		oldTemplate.Spec.Affinity = schedulingAffinity(sp.Template.Spec.Affinity, oldTemplate.Spec.Affinity)
		oldTemplate.Spec.NodeSelector = sp.Template.Spec.NodeSelector
		oldTemplate.Spec.Tolerations = sp.Template.Spec.Tolerations
		oldTemplate.Spec.SchedulingGates = sp.Template.Spec.SchedulingGates
		oldTemplate.Annotations = sp.Template.Annotations
		oldTemplate.Labels = sp.Template.Labels
	}
	errs = append(errs, immutable(sp.Template, *oldTemplate, p.Child("template"))...)
	errs = append(errs, immutable(sp.CompletionMode, osp.CompletionMode, p.Child("completionMode"))...)
	errs = append(errs, immutable(sp.PodFailurePolicy, osp.PodFailurePolicy, p.Child("podFailurePolicy"))...)
	errs = append(errs, immutable(sp.BackoffLimitPerIndex, osp.BackoffLimitPerIndex, p.Child("backoffLimitPerIndex"))...)
	errs = append(errs, immutable(sp.ManagedBy, osp.ManagedBy, p.Child("managedBy"))...)
	errs = append(errs, immutable(sp.SuccessPolicy, osp.SuccessPolicy, p.Child("successPolicy"))...)
	return errs
}

// schedulingAffinity is the old template's affinity with the new node
// affinity in it: node affinity may change on a suspended Job, the rest of
// the affinity may not.
func schedulingAffinity(cur, old *corev1.Affinity) *corev1.Affinity {
	switch {
	case cur == nil && old != nil:
		o := *old
		o.NodeAffinity = nil
		if o == (corev1.Affinity{}) {
			return nil
		}
		return &o
	case cur != nil && old == nil:
		return &corev1.Affinity{NodeAffinity: cur.NodeAffinity}
	case cur != nil && old != nil:
		o := *old
		o.NodeAffinity = cur.NodeAffinity
		return &o
	}
	return old
}

func validateJobCompletionsUpdate(sp, osp *batchv1.JobSpec, p *field.Path) field.ErrorList {
	indexed := sp.CompletionMode != nil && *sp.CompletionMode == batchv1.IndexedCompletion
	if !indexed {
		return immutable(sp.Completions, osp.Completions, p)
	}
	if !semanticChanged(sp.Completions, osp.Completions) || sp.Completions == nil {
		return nil
	}
	if sp.Parallelism == nil || *sp.Completions != *sp.Parallelism {
		return field.ErrorList{field.Invalid(p, sp.Completions, "can only be modified in tandem with spec.parallelism")}
	}
	return nil
}

func validateJobStatus(obj, _ *batchv1.Job) field.ErrorList {
	st := obj.Status
	p := field.NewPath("status")
	errs := validateReplicaCounts(p, count{"active", st.Active}, count{"succeeded", st.Succeeded}, count{"failed", st.Failed})
	if st.Ready != nil {
		errs = append(errs, validateNonnegative(*st.Ready, p.Child("ready"))...)
	}
	if st.Terminating != nil {
		errs = append(errs, validateNonnegative(*st.Terminating, p.Child("terminating"))...)
	}
	if st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Before(st.StartTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), st.CompletionTime, "completionTime cannot be set before startTime"))
	}
	return errs
}

func ptrDeref(b *bool) bool { return b != nil && *b }

// jobFields: status.successful, as upstream's JobToSelectableFields.
func jobFields(j *batchv1.Job) fields.Set {
	return fields.Set{"status.successful": strconv.Itoa(int(j.Status.Succeeded))}
}

// jobTable is upstream's printJob.
func jobTable(c clock) TableConvertor {
	return table[*batchv1.Job]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Status", "string", "Status of the job."),
			col("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
			col("Duration", "string", "Time required to complete the job."),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			selectorColumn(batchv1.JobSpec{}.SwaggerDoc()["selector"]),
		},
		cells: func(j *batchv1.Job) []interface{} {
			names, images := templateContainers(&j.Spec.Template)
			return []interface{}{
				j.Name, jobStatus(j), jobCompletions(j), jobDuration(j, c), c.since(j.CreationTimestamp),
				names, images, metav1.FormatLabelSelector(j.Spec.Selector),
			}
		},
	}
}

func jobCompletions(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	var parallelism int32
	if j.Spec.Parallelism != nil {
		parallelism = *j.Spec.Parallelism
	}
	if parallelism > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, parallelism)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDuration(j *batchv1.Job, c clock) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(c().Sub(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}

// jobStatus is the STATUS cell, in upstream's order of precedence.
func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}
