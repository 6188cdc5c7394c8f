package registry

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	// CronJob time zones are validated with time.LoadLocation; the
	// embedded database makes that independent of the host's zoneinfo,
	// as it is for the CronJob controller in the same binary.
	_ "time/tzdata"

	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/cron"
)

// maxCronJobNameLength: the controller names its Jobs "<name>-<minutes>",
// an 11-character suffix, and a Job name is a 63-character label value.
const maxCronJobNameLength = 63 - 11

func cronJobResource(c clock) *Resource {
	gv := v1(batchGroup)
	s := strategy[*batchv1.CronJob]{behavior[*batchv1.CronJob]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *batchv1.CronJob) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(cj *batchv1.CronJob) { cj.Status = batchv1.CronJobStatus{} },
		keepStatus:  func(obj, old *batchv1.CronJob) { obj.Status = old.Status },
		keepSpec:    func(obj, old *batchv1.CronJob) { obj.Spec = old.Spec },
		defaults:    defaultCronJob,
		// Create has rules of its own (cronJobStrategy.Validate); an
		// update is judged against old, which may carry a TZ= schedule or
		// a time zone from before today's rules.
		validateUpdate: func(obj, old *batchv1.CronJob) field.ErrorList {
			return validateCronJobSpec(&obj.Spec, &old.Spec, field.NewPath("spec"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "CronJob",
		Resource:         "cronjobs",
		SingularName:     "cronjob",
		Namespaced:       true,
		ShortNames:       []string{"cj"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &batchv1.CronJob{} },
		NewList:          func() runtime.Object { return &batchv1.CronJobList{} },
		Strategy:         cronJobStrategy{s},
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            cronJobTable(c),
		StorageKeyPrefix: storagePrefix(gv, "cronjobs"),
	}
}

// cronJobStrategy adds the create-only rules to the generic strategy.
type cronJobStrategy struct{ strategy[*batchv1.CronJob] }

// Validate is upstream's ValidateCronJobCreate. The 52-character name
// limit applies on create only, so CronJobs named before it existed can
// still be updated and deleted.
func (s cronJobStrategy) Validate(ctx context.Context, o runtime.Object) field.ErrorList {
	cj := o.(*batchv1.CronJob)
	errs := s.strategy.Validate(ctx, o)
	errs = append(errs, validateCronJobSpec(&cj.Spec, nil, field.NewPath("spec"))...)
	if len(cj.Name) > maxCronJobNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	return errs
}

// defaultCronJob is batch/v1 SetDefaults_CronJob plus the pod defaults of
// the job template's pod template. The job template itself gets no Job
// defaults, as upstream: the Jobs created from it do.
func defaultCronJob(cj *batchv1.CronJob) {
	sp := &cj.Spec
	if sp.ConcurrencyPolicy == "" {
		sp.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if sp.Suspend == nil {
		sp.Suspend = ptrTo(false)
	}
	if sp.SuccessfulJobsHistoryLimit == nil {
		sp.SuccessfulJobsHistoryLimit = ptrTo(int32(3))
	}
	if sp.FailedJobsHistoryLimit == nil {
		sp.FailedJobsHistoryLimit = ptrTo(int32(1))
	}
	defaultPodTemplate(&sp.JobTemplate.Spec.Template)
}

// validateCronJobSpec is upstream's validateCronJobSpec; old is nil on
// create.
func validateCronJobSpec(sp, old *batchv1.CronJobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sp.Schedule == "" {
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	} else {
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		errs = append(errs, validateSchedule(sp.Schedule, allowTZ, sp.TimeZone, p.Child("schedule"))...)
	}
	if d := sp.StartingDeadlineSeconds; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, p.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !equalStringPtr(old.TimeZone, sp.TimeZone) {
		errs = append(errs, validateTimeZone(sp.TimeZone, p.Child("timeZone"))...)
	}
	cp := p.Child("concurrencyPolicy")
	switch sp.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, sp.ConcurrencyPolicy, []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	errs = append(errs, validateJobTemplate(&sp.JobTemplate, p.Child("jobTemplate"))...)
	if l := sp.SuccessfulJobsHistoryLimit; l != nil {
		errs = append(errs, validateNonnegative(*l, p.Child("successfulJobsHistoryLimit"))...)
	}
	if l := sp.FailedJobsHistoryLimit; l != nil {
		errs = append(errs, validateNonnegative(*l, p.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// validateJobTemplate is upstream's ValidateJobTemplateSpec: the Job rules
// except the selector, which each Job generates for itself.
func validateJobTemplate(t *batchv1.JobTemplateSpec, p *field.Path) field.ErrorList {
	sp := p.Child("spec")
	errs := validateJobTemplateRules(&t.Spec, sp)
	if t.Spec.Selector != nil {
		errs = append(errs, field.Invalid(sp.Child("selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if t.Spec.ManualSelector != nil && *t.Spec.ManualSelector {
		errs = append(errs, field.NotSupported(sp.Child("manualSelector"), t.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}

// validateSchedule parses the schedule as the controller will; TZ=/CRON_TZ=
// prefixes are refused in favour of spec.timeZone unless the old object
// already had one.
func validateSchedule(schedule string, allowTZ bool, timeZone *string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.Parse(schedule); err != nil {
		// The package prefix adds nothing for the user.
		msg := strings.TrimPrefix(err.Error(), cron.ErrSyntax.Error()+": ")
		if !errors.Is(err, cron.ErrSyntax) {
			msg = err.Error()
		}
		errs = append(errs, field.Invalid(p, schedule, msg))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && timeZone != nil:
		errs = append(errs, field.Invalid(p, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// validTimeZoneComponent is upstream's: IANA name components, digits and
// '+' tolerated for legacy names.
var validTimeZoneComponent = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// cronJobTable is upstream's printCronJob.
func cronJobTable(c clock) TableConvertor {
	return table[*batchv1.CronJob]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
			col("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
			col("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
			col("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
			col("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			selectorColumn(batchv1.JobSpec{}.SwaggerDoc()["selector"]),
		},
		cells: func(cj *batchv1.CronJob) []interface{} {
			last := "<none>"
			if cj.Status.LastScheduleTime != nil {
				last = c.since(*cj.Status.LastScheduleTime)
			}
			tz := "<none>"
			if cj.Spec.TimeZone != nil {
				tz = *cj.Spec.TimeZone
			}
			// upstream's printBoolPtr
			suspend := "<unset>"
			if cj.Spec.Suspend != nil {
				suspend = "False"
				if *cj.Spec.Suspend {
					suspend = "True"
				}
			}
			names, images := templateContainers(&cj.Spec.JobTemplate.Spec.Template)
			return []interface{}{
				cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, c.since(cj.CreationTimestamp),
				names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector),
			}
		},
	}
}
