package request

import "context"

// This file carries, on a request's context, where the code deep inside a
// request (admission plugins, strategies) reports what is not an error:
// warnings for the client and annotations for the audit log. The handler
// that owns the response installs the sinks; code that reports through
// them does not need the http.ResponseWriter, and reporting on a context
// without a sink is a no-op (the server's own writes, tests).

type (
	warningsKey    struct{}
	annotationsKey struct{}
)

// WarningSink receives warnings for the client, which the API server sends
// as `Warning: 299 - "..."` response headers (kubectl prints them as
// "Warning: ..."). AddWarning is called from the request's goroutine before
// the response is written.
type WarningSink interface {
	AddWarning(text string)
}

// WithWarnings returns a copy of ctx whose warnings go to sink.
func WithWarnings(ctx context.Context, sink WarningSink) context.Context {
	return context.WithValue(ctx, warningsKey{}, sink)
}

// AddWarning reports a warning for the client of ctx's request; without a
// sink on ctx it is dropped.
func AddWarning(ctx context.Context, text string) {
	if s, ok := ctx.Value(warningsKey{}).(WarningSink); ok && s != nil {
		s.AddWarning(text)
	}
}

// AnnotationSink receives audit annotations (upstream's
// audit.AddAuditAnnotation: key/value pairs the audit event of the request
// carries in its "annotations"). The audit backend installs one per
// request it audits.
type AnnotationSink interface {
	AddAnnotation(key, value string)
}

// WithAuditAnnotations returns a copy of ctx whose audit annotations go to
// sink.
func WithAuditAnnotations(ctx context.Context, sink AnnotationSink) context.Context {
	return context.WithValue(ctx, annotationsKey{}, sink)
}

// AddAuditAnnotation records key=value on the audit event of ctx's request;
// without a sink on ctx (the request is not audited) it is dropped.
func AddAuditAnnotation(ctx context.Context, key, value string) {
	if s, ok := ctx.Value(annotationsKey{}).(AnnotationSink); ok && s != nil {
		s.AddAnnotation(key, value)
	}
}
