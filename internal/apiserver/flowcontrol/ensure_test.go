package flowcontrol

import (
	"context"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

func TestEnsureBootstrapConfiguration(t *testing.T) {
	e := newEnv(t, nil, nil)
	ctx := context.Background()
	o := e.api.Objects()
	getPL := func(name string) (*flowcontrolv1.PriorityLevelConfiguration, error) {
		obj, err := o.Get(ctx, priorityLevelsGVR, "", name)
		if err != nil {
			return nil, err
		}
		return obj.(*flowcontrolv1.PriorityLevelConfiguration), nil
	}
	for _, pl := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
		if _, err := getPL(pl.Name); err != nil {
			t.Errorf("priority level %s: %v", pl.Name, err)
		}
	}
	for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
		if _, err := o.Get(ctx, flowSchemasGVR, "", fs.Name); err != nil {
			t.Errorf("flow schema %s: %v", fs.Name, err)
		}
	}

	t.Run("a deleted mandatory object comes back", func(t *testing.T) {
		cur, err := o.Get(ctx, flowSchemasGVR, "", flowcontrolv1.FlowSchemaNameCatchAll)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Delete(ctx, flowSchemasGVR, "", flowcontrolv1.FlowSchemaNameCatchAll, cur); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "catch-all recreated", func() bool {
			again, err := o.Get(ctx, flowSchemasGVR, "", flowcontrolv1.FlowSchemaNameCatchAll)
			return err == nil && again.(*flowcontrolv1.FlowSchema).UID != cur.(*flowcontrolv1.FlowSchema).UID
		})
	})
	t.Run("a suggested object is restored while it asks to be", func(t *testing.T) {
		pl, err := getPL("workload-low")
		if err != nil {
			t.Fatal(err)
		}
		pl.Spec.Limited.NominalConcurrencyShares = ptr(int32(7))
		if _, err := o.Update(ctx, priorityLevelsGVR, pl); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "workload-low restored", func() bool {
			pl, err := getPL("workload-low")
			return err == nil && *pl.Spec.Limited.NominalConcurrencyShares == 100
		})
	})
	t.Run("an operator's change is kept once the annotation says so", func(t *testing.T) {
		pl, err := getPL("workload-high")
		if err != nil {
			t.Fatal(err)
		}
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
		pl.Spec.Limited.NominalConcurrencyShares = ptr(int32(7))
		if _, err := o.Update(ctx, priorityLevelsGVR, pl); err != nil {
			t.Fatal(err)
		}
		// A round of ensuring leaves it alone.
		e.create("flowschemas", usersSchema("unrelated", "workload-low", "nobody"))
		fs := flowSchemaOps(func() []*flowcontrolv1.FlowSchema { return listOf[*flowcontrolv1.FlowSchema](e.c.fsInf) })
		pls := priorityLevelOps(func() []*flowcontrolv1.PriorityLevelConfiguration {
			return listOf[*flowcontrolv1.PriorityLevelConfiguration](e.c.plInf)
		})
		if err := ensureAll(ctx, o, fs, pls); err != nil {
			t.Fatal(err)
		}
		pl, err = getPL("workload-high")
		if err != nil || *pl.Spec.Limited.NominalConcurrencyShares != 7 {
			t.Errorf("workload-high: %v %+v", err, pl)
		}
	})
	t.Run("a left-over auto-updated object is deleted, an operator's is not", func(t *testing.T) {
		stale := usersSchema("stale-default", "workload-low", "nobody")
		stale.Annotations = map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}
		e.create("flowschemas", stale)
		waitFor(t, "stale-default deleted", func() bool {
			_, err := o.Get(ctx, flowSchemasGVR, "", "stale-default")
			return apierrors.IsNotFound(err)
		})
		if _, err := o.Get(ctx, flowSchemasGVR, "", "unrelated"); err != nil {
			t.Errorf("operator's flow schema: %v", err)
		}
	})
}

func TestRevise(t *testing.T) {
	ops := priorityLevelOps(nil)
	boot := bootstrap.SuggestedPriorityLevelConfigurationWorkloadLow
	changed := func(annotation string, generation int64) *flowcontrolv1.PriorityLevelConfiguration {
		pl := boot.DeepCopy()
		pl.Generation = generation
		pl.Annotations = map[string]string{}
		if annotation != "" {
			pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = annotation
		}
		pl.Spec.Limited.NominalConcurrencyShares = ptr(int32(1))
		return pl
	}
	tests := []struct {
		name                 string
		cur                  *flowcontrolv1.PriorityLevelConfiguration
		mandatory            bool
		wantUpdate, wantSpec bool
		wantAnnotation       string
	}{
		{"suggested, annotated true: spec restored", changed("true", 2), false, true, true, "true"},
		{"suggested, annotated false: left alone", changed("false", 2), false, false, false, "false"},
		{"suggested, no annotation, untouched (generation 1): restored", changed("", 1), false, true, true, "true"},
		{"suggested, no annotation, edited: annotated false, spec kept", changed("", 2), false, true, false, "false"},
		{"mandatory, annotated false: forced back", changed("false", 2), true, true, true, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, update := revise(ops, tt.cur, boot, tt.mandatory)
			if update != tt.wantUpdate {
				t.Fatalf("update %v, want %v", update, tt.wantUpdate)
			}
			if !update {
				return
			}
			if restored := *got.Spec.Limited.NominalConcurrencyShares == 100; restored != tt.wantSpec {
				t.Errorf("spec restored %v, want %v", restored, tt.wantSpec)
			}
			if a := got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey]; a != tt.wantAnnotation {
				t.Errorf("annotation %q, want %q", a, tt.wantAnnotation)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
