package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errKeys renders errors as "<type>: <field>", sorted, so tests state
// exactly which problems (and only those) were found.
func errKeys(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s", e.Type, e.Field))
	}
	sort.Strings(out)
	return out
}

func wantErrs(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	sort.Strings(want)
	got := errKeys(errs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n  got  %q\n  want %q\n  full: %v", got, want, errs.ToAggregate())
	}
}

// create runs what the API server runs on create: prepare, then validate.
func create(r *Resource, obj runtime.Object) field.ErrorList {
	ctx := context.Background()
	r.Strategy.PrepareForCreate(ctx, obj)
	return r.Strategy.Validate(ctx, obj)
}

// update runs what the API server runs on update of the main resource.
func update(r *Resource, obj, old runtime.Object) field.ErrorList {
	ctx := context.Background()
	r.Strategy.PrepareForUpdate(ctx, obj, old)
	return r.Strategy.ValidateUpdate(ctx, obj, old)
}

func updateStatus(r *Resource, obj, old runtime.Object) field.ErrorList {
	ctx := context.Background()
	r.Status.PrepareForStatusUpdate(ctx, obj, old)
	return r.Status.ValidateStatusUpdate(ctx, obj, old)
}

// cells returns a row keyed by column name.
func cells(r *Resource, obj runtime.Object) map[string]interface{} {
	row := map[string]interface{}{}
	vals := r.Table.Cells(obj)
	for i, c := range r.Table.Columns() {
		row[c.Name] = vals[i]
	}
	return row
}

func columnNames(r *Resource) []string {
	var out []string
	for _, c := range r.Table.Columns() {
		name := c.Name
		if c.Priority > 0 {
			name += "*"
		}
		out = append(out, name)
	}
	return out
}
