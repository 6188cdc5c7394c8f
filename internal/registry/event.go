package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Events are served in core/v1 and events.k8s.io/v1, stored once in
// core/v1 as upstream stores them: an event written through either API is
// read through the other (event_conversion.go). Each API validates in its
// own field names.

// noteLengthLimit is upstream's limit on an event's message (1 KiB).
const noteLengthLimit = 1024

func coreEventResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.Event]{behavior[*corev1.Event]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		validate:   validateCoreEvent,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Event",
		Resource:         "events",
		SingularName:     "event",
		Namespaced:       true,
		ShortNames:       []string{"ev"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &corev1.Event{} },
		NewList:          func() runtime.Object { return &corev1.EventList{} },
		Strategy:         s,
		SelectableFields: func(o runtime.Object) fields.Set { return coreEventFields(o.(*corev1.Event)) },
		Table:            eventTable(c, func(e *corev1.Event) *corev1.Event { return e }),
		StorageKeyPrefix: storagePrefix(gv, "events"),
	}
}

// validateCoreEvent keeps the legacy API's leniency: only what upstream
// enforces for core/v1 writers.
func validateCoreEvent(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	io := e.InvolvedObject
	if io.Namespace != "" && e.Namespace != "" && io.Namespace != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), io.Namespace, "does not match event.namespace"))
	}
	if !e.EventTime.IsZero() {
		// Writers of the new fields are held to the new API's rules.
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		errs = append(errs, validateQualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
		if len(e.ReportingInstance) > 128 {
			errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", "can have at most 128 characters"))
		}
		if len(e.Action) > 128 {
			errs = append(errs, field.Invalid(field.NewPath("action"), "", "can have at most 128 characters"))
		}
		if len(e.Message) > noteLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
		}
	}
	if e.Type != "" && e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	return errs
}

func validateQualifiedName(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// coreEventFields are upstream's EventToSelectableFields.
func coreEventFields(e *corev1.Event) fields.Set {
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	io := e.InvolvedObject
	return fields.Set{
		"involvedObject.kind":            io.Kind,
		"involvedObject.namespace":       io.Namespace,
		"involvedObject.name":            io.Name,
		"involvedObject.uid":             string(io.UID),
		"involvedObject.apiVersion":      io.APIVersion,
		"involvedObject.resourceVersion": io.ResourceVersion,
		"involvedObject.fieldPath":       io.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}

func eventsV1EventResource(c clock) *Resource {
	gv := v1(eventsGroup)
	s := strategy[*eventsv1.Event]{behavior[*eventsv1.Event]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		validate:   validateEventsV1Event,
		validateUpdate: func(obj, old *eventsv1.Event) field.ErrorList {
			// Everything but the series (and metadata) is fixed once
			// recorded, as upstream's ValidateEventUpdate for this API.
			var errs field.ErrorList
			for _, f := range []struct {
				name     string
				now, was any
			}{
				{"regarding", obj.Regarding, old.Regarding}, {"related", obj.Related, old.Related},
				{"reason", obj.Reason, old.Reason}, {"note", obj.Note, old.Note}, {"type", obj.Type, old.Type},
				{"action", obj.Action, old.Action}, {"eventTime", obj.EventTime, old.EventTime},
				{"reportingController", obj.ReportingController, old.ReportingController},
				{"reportingInstance", obj.ReportingInstance, old.ReportingInstance},
			} {
				errs = append(errs, immutable(f.now, f.was, field.NewPath(f.name))...)
			}
			return errs
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Event",
		Resource:         "events",
		SingularName:     "event",
		Namespaced:       true,
		ShortNames:       []string{"ev"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &eventsv1.Event{} },
		NewList:          func() runtime.Object { return &eventsv1.EventList{} },
		Strategy:         s,
		SelectableFields: func(o runtime.Object) fields.Set { return eventsV1Fields(o.(*eventsv1.Event)) },
		Table:            eventTable(c, eventsV1AsCore),
		StorageKeyPrefix: storagePrefix(v1(coreGroup), "events"),
		StorageVersion:   v1(coreGroup),
	}
}

func validateEventsV1Event(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedFirstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedLastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedCount"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedSource"), "", "needs to be unset"))
	}
	if e.ReportingController == "" {
		errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
	}
	errs = append(errs, validateQualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
	for _, f := range []struct{ name, v string }{{"reportingInstance", e.ReportingInstance}, {"action", e.Action}, {"reason", e.Reason}} {
		switch {
		case f.v == "":
			errs = append(errs, field.Required(field.NewPath(f.name), ""))
		case len(f.v) > 128:
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", "can have at most 128 characters"))
		}
	}
	if len(e.Note) > noteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("note"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	if r := e.Regarding; r.Namespace != "" && r.Namespace != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), r.Namespace, "does not match event.namespace"))
	}
	return errs
}

// eventsV1Fields serves both field names: this API's own (regarding.*)
// and the core names upstream's field-label conversion maps them to.
func eventsV1Fields(e *eventsv1.Event) fields.Set {
	set := coreEventFields(eventsV1AsCore(e))
	r := e.Regarding
	for k, v := range map[string]string{
		"regarding.kind": r.Kind, "regarding.namespace": r.Namespace, "regarding.name": r.Name,
		"regarding.uid": string(r.UID), "regarding.apiVersion": r.APIVersion,
		"regarding.resourceVersion": r.ResourceVersion, "regarding.fieldPath": r.FieldPath,
		"reportingController": e.ReportingController, "deprecatedSource.component": e.DeprecatedSource.Component,
	} {
		set[k] = v
	}
	return set
}

// eventsV1AsCore maps an events.k8s.io event onto core's field names, for
// the shared printer and field set.
func eventsV1AsCore(e *eventsv1.Event) *corev1.Event {
	ce := &corev1.Event{}
	_ = eventsV1ToCoreEvent(e, ce) // never fails
	return ce
}

// eventTable is upstream's printEvent; both APIs print alike. Unlike most
// tables the name is a wide column at the end, as upstream.
func eventTable[T runtime.Object](c clock, asCore func(T) *corev1.Event) TableConvertor {
	return table[T]{
		columns: []metav1.TableColumnDefinition{
			col("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
			col("Type", "string", corev1.Event{}.SwaggerDoc()["type"]),
			col("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"]),
			col("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"]),
			wide(col("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
			wide(col("Source", "string", corev1.Event{}.SwaggerDoc()["source"])),
			col("Message", "string", corev1.Event{}.SwaggerDoc()["message"]),
			wide(col("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"])),
			wide(col("Count", "string", corev1.Event{}.SwaggerDoc()["count"])),
			wide(metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}),
		},
		cells: func(o T) []interface{} { return eventCells(c, asCore(o)) },
	}
}

func (c clock) sinceMicro(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return c.since(metav1.NewTime(t.Time))
}

func eventCells(c clock, e *corev1.Event) []interface{} {
	first := c.since(e.FirstTimestamp)
	if e.FirstTimestamp.IsZero() {
		first = c.sinceMicro(e.EventTime)
	}
	last := c.since(e.LastTimestamp)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = c.sinceMicro(e.Series.LastObservedTime)
		count = e.Series.Count
	} else if count == 0 {
		// Singleton events of the new API carry no count.
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	component, instance := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if instance == "" {
		instance = e.ReportingInstance
	}
	source := component
	if component != "" && instance != "" {
		source = component + ", " + instance
	}
	return []interface{}{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}
