package admission_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// plugin records its calls in a shared log; fail makes a phase refuse.
type plugin struct {
	admission.Handler
	name string
	log  *[]string
	fail string // "admit", "allocate" or "validate"
}

func (p *plugin) record(phase string) error {
	*p.log = append(*p.log, p.name+"."+phase)
	if p.fail == phase {
		return errors.New(p.name + " refuses")
	}
	return nil
}

type mutating struct{ *plugin }

func (m mutating) Admit(context.Context, *admission.Attributes) error { return m.record("admit") }

type validating struct{ *plugin }

func (v validating) Validate(context.Context, *admission.Attributes) error {
	return v.record("validate")
}

type allocating struct{ *plugin }

func (a allocating) Allocate(context.Context, *admission.Attributes) (admission.Finish, error) {
	if err := a.record("allocate"); err != nil {
		return nil, err
	}
	return func(written bool) {
		*a.log = append(*a.log, a.name+".finish("+map[bool]string{true: "true", false: "false"}[written]+")")
	}, nil
}

// both mutates and validates, as upstream's Priority does.
type both struct{ *plugin }

func (b both) Admit(context.Context, *admission.Attributes) error    { return b.record("admit") }
func (b both) Validate(context.Context, *admission.Attributes) error { return b.record("validate") }

func TestChain(t *testing.T) {
	all := admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect)
	tests := []struct {
		name    string
		op      admission.Operation
		plugins func(log *[]string) []admission.Interface
		want    []string
		wantErr bool
	}{{
		name: "phases in order, plugins in order within a phase",
		op:   admission.Create,
		plugins: func(log *[]string) []admission.Interface {
			return []admission.Interface{
				validating{&plugin{Handler: all, name: "v1", log: log}},
				both{&plugin{Handler: all, name: "b", log: log}},
				allocating{&plugin{Handler: all, name: "al", log: log}},
				mutating{&plugin{Handler: all, name: "m", log: log}},
			}
		},
		want: []string{"b.admit", "m.admit", "al.allocate", "v1.validate", "b.validate", "al.finish(true)"},
	}, {
		name: "Handles filters by operation",
		op:   admission.Delete,
		plugins: func(log *[]string) []admission.Interface {
			return []admission.Interface{
				mutating{&plugin{Handler: admission.NewHandler(admission.Create), name: "create-only", log: log}},
				mutating{&plugin{Handler: admission.NewHandler(admission.Delete), name: "delete-only", log: log}},
				validating{&plugin{Handler: admission.NewHandler(admission.Update, admission.Create), name: "v", log: log}},
			}
		},
		want: []string{"delete-only.admit"},
	}, {
		name: "a mutating refusal stops the chain",
		op:   admission.Update,
		plugins: func(log *[]string) []admission.Interface {
			return []admission.Interface{
				mutating{&plugin{Handler: all, name: "m1", log: log, fail: "admit"}},
				mutating{&plugin{Handler: all, name: "m2", log: log}},
				validating{&plugin{Handler: all, name: "v", log: log}},
			}
		},
		want:    []string{"m1.admit"},
		wantErr: true,
	}, {
		name: "a failed allocation gives back the earlier ones, last first",
		op:   admission.Create,
		plugins: func(log *[]string) []admission.Interface {
			return []admission.Interface{
				allocating{&plugin{Handler: all, name: "a1", log: log}},
				allocating{&plugin{Handler: all, name: "a2", log: log}},
				allocating{&plugin{Handler: all, name: "a3", log: log, fail: "allocate"}},
			}
		},
		want:    []string{"a1.allocate", "a2.allocate", "a3.allocate", "a2.finish(false)", "a1.finish(false)"},
		wantErr: true,
	}, {
		name: "a validating refusal after allocation: the caller finishes with false",
		op:   admission.Create,
		plugins: func(log *[]string) []admission.Interface {
			return []admission.Interface{
				allocating{&plugin{Handler: all, name: "a1", log: log}},
				allocating{&plugin{Handler: all, name: "a2", log: log}},
				validating{&plugin{Handler: all, name: "v", log: log, fail: "validate"}},
			}
		},
		want:    []string{"a1.allocate", "a2.allocate", "v.validate", "a2.finish(false)", "a1.finish(false)"},
		wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			c, err := admission.NewChain(tt.plugins(&log)...)
			if err != nil {
				t.Fatal(err)
			}
			err = write(c, &admission.Attributes{Operation: tt.op})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if !slices.Equal(log, tt.want) {
				t.Errorf("calls = %q\nwant    %q", log, tt.want)
			}
		})
	}
}

// write drives c as a REST handler does around a successful store write.
func write(c *admission.Chain, a *admission.Attributes) error {
	ctx := context.Background()
	if err := c.Admit(ctx, a); err != nil {
		return err
	}
	finish, err := c.Allocate(ctx, a)
	if err != nil {
		return err
	}
	if err := c.Validate(ctx, a); err != nil {
		finish(false)
		return err
	}
	finish(true)
	return nil
}

func TestNilChainAdmitsEverything(t *testing.T) {
	var c *admission.Chain
	if err := write(c, &admission.Attributes{Operation: admission.Create}); err != nil {
		t.Fatal(err)
	}
}

func TestNewChainRefusesAPluginWithoutAPhase(t *testing.T) {
	if _, err := admission.NewChain(admission.NewHandler(admission.Create)); err == nil {
		t.Fatal("a plugin that only Handles was accepted")
	}
}

func TestHandler(t *testing.T) {
	h := admission.NewHandler(admission.Create, admission.Connect)
	for op, want := range map[admission.Operation]bool{admission.Create: true, admission.Connect: true, admission.Update: false, admission.Delete: false, "BOGUS": false} {
		if got := h.Handles(op); got != want {
			t.Errorf("Handles(%s) = %v, want %v", op, got, want)
		}
	}
}
