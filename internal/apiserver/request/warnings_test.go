package request

import (
	"context"
	"testing"
)

type recorded struct {
	warnings    []string
	annotations [][2]string
}

func (r *recorded) AddWarning(text string) { r.warnings = append(r.warnings, text) }
func (r *recorded) AddAnnotation(key, value string) {
	r.annotations = append(r.annotations, [2]string{key, value})
}

func TestWarningAndAnnotationSinks(t *testing.T) {
	// Without sinks both are dropped, not a panic.
	AddWarning(context.Background(), "w")
	AddAuditAnnotation(context.Background(), "k", "v")

	var r recorded
	ctx := WithAuditAnnotations(WithWarnings(context.Background(), &r), &r)
	AddWarning(ctx, "first")
	AddWarning(ctx, "second")
	AddAuditAnnotation(ctx, "pod-security.kubernetes.io/enforce-policy", "restricted:latest")
	if len(r.warnings) != 2 || r.warnings[0] != "first" || r.warnings[1] != "second" {
		t.Fatalf("warnings %q", r.warnings)
	}
	if len(r.annotations) != 1 || r.annotations[0] != [2]string{"pod-security.kubernetes.io/enforce-policy", "restricted:latest"} {
		t.Fatalf("annotations %q", r.annotations)
	}
	// A nil sink is the same as none.
	AddWarning(WithWarnings(context.Background(), nil), "w")
	AddAuditAnnotation(WithAuditAnnotations(context.Background(), nil), "k", "v")
}
