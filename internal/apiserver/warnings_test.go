package apiserver

import (
	"net/http/httptest"
	"testing"
)

// TestHeaderWarnings: each distinct warning is one RFC 7234 Warning header
// (what client-go parses and kubectl prints), duplicates dropped.
func TestHeaderWarnings(t *testing.T) {
	w := httptest.NewRecorder()
	h := &headerWarnings{w: w}
	h.AddWarning(`would violate PodSecurity "restricted:latest": privileged`)
	h.AddWarning(`would violate PodSecurity "restricted:latest": privileged`)
	h.AddWarning("")
	h.AddWarning("second")
	got := w.Header().Values("Warning")
	want := []string{`299 - "would violate PodSecurity \"restricted:latest\": privileged"`, `299 - "second"`}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Warning headers %q, want %q", got, want)
	}
}
