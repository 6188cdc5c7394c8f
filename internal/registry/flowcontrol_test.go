package registry

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

func TestFlowSchemaValidation(t *testing.T) {
	reg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := mustLookup(t, reg, flowcontrolGroup, "flowschemas")
	good := func() *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{ObjectMeta: meta("mine", ""), Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "ns", Name: "*"}}},
				ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}},
			}},
		}}
	}
	tests := []struct {
		name   string
		mutate func(*flowcontrolv1.FlowSchema)
		want   []string
	}{
		{"valid, precedence defaulted", func(*flowcontrolv1.FlowSchema) {}, nil},
		{"precedence 1 is exempt's", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }, []string{"Invalid value: spec.matchingPrecedence"}},
		{"precedence too large", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }, []string{"Invalid value: spec.matchingPrecedence"}},
		{"no priority level", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" },
			[]string{"Required value: spec.priorityLevelConfiguration.name"}},
		{"bad distinguisher", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "ByPod" },
			[]string{"Unsupported value: spec.distinguisherMethod.type"}},
		{"user subject with a group", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects[0] = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "u"}, Group: &flowcontrolv1.GroupSubject{Name: "g"}}
		}, []string{"Forbidden: spec.rules[0].subjects[0].group"}},
		{"service account without namespace", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[0].ServiceAccount.Namespace = "" },
			[]string{"Required value: spec.rules[0].subjects[0].serviceAccount.namespace"}},
		{"wildcard verb with others", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules[0].Verbs = []string{"*", "get"} },
			[]string{"Invalid value: spec.rules[0].resourceRules[0].verbs"}},
		{"unknown verb", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules[0].Verbs = []string{"escalate"} },
			[]string{"Unsupported value: spec.rules[0].resourceRules[0].verbs"}},
		{"namespaced rule without namespaces", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules[0].Namespaces = nil },
			[]string{"Required value: spec.rules[0].resourceRules[0].namespaces"}},
		{"infix wildcard URL", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].NonResourceRules[0].NonResourceURLs = []string{"/a*b"}
		},
			[]string{"Invalid value: spec.rules[0].nonResourceRules[0].nonResourceURLs[0]"}},
		{"no subjects and no rules", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0] = flowcontrolv1.PolicyRulesWithSubjects{} },
			[]string{"Required value: spec.rules[0]", "Required value: spec.rules[0].subjects"}},
		{"mandatory spec changed", func(fs *flowcontrolv1.FlowSchema) { fs.Name = flowcontrolv1.FlowSchemaNameCatchAll },
			[]string{"Invalid value: spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := good()
			tt.mutate(fs)
			wantErrs(t, create(r, fs), tt.want...)
		})
	}
	t.Run("mandatory objects as bootstrapped are valid", func(t *testing.T) {
		for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
			wantErrs(t, create(r, fs.DeepCopy()))
		}
	})
	t.Run("status update keeps the spec and rejects duplicate conditions", func(t *testing.T) {
		old := good()
		wantErrs(t, create(r, old))
		fs := old.DeepCopy()
		fs.Spec.MatchingPrecedence = 5
		c := flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse}
		fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{c, c}
		wantErrs(t, updateStatus(r, fs, old), "Duplicate value: status.conditions[1].type")
		if fs.Spec.MatchingPrecedence != 1000 {
			t.Errorf("status update changed the spec: %d", fs.Spec.MatchingPrecedence)
		}
		if row := cells(r, old); row["PriorityLevel"] != "workload-low" || row["MatchingPrecedence"] != int64(1000) || row["MissingPL"] != "?" {
			t.Errorf("row %v", row)
		}
	})
}

func TestPriorityLevelConfigurationValidation(t *testing.T) {
	reg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := mustLookup(t, reg, flowcontrolGroup, "prioritylevelconfigurations")
	good := func() *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: meta("mine", ""), Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}},
		}}
	}
	tests := []struct {
		name   string
		mutate func(*flowcontrolv1.PriorityLevelConfiguration)
		want   []string
	}{
		{"valid, defaulted", func(*flowcontrolv1.PriorityLevelConfiguration) {}, nil},
		{"exempt type under another name", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Type = flowcontrolv1.PriorityLevelEnablementExempt
		}, []string{"Forbidden: spec.limited", "Invalid value: spec.type"}},
		{"limited without limited", func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil },
			[]string{"Required value: spec.limited"}},
		{"hand larger than deck", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5, QueueLengthLimit: 1}
		}, []string{"Invalid value: spec.limited.limitResponse.queuing.handSize"}},
		{"too much entropy", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 10000000, HandSize: 100, QueueLengthLimit: 1}
		}, []string{"Invalid value: spec.limited.limitResponse.queuing.handSize"}},
		{"reject with queuing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}, []string{"Forbidden: spec.limited.limitResponse.queuing"}},
		{"lendable over 100", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LendablePercent = ptrTo(int32(101))
		},
			[]string{"Invalid value: spec.limited.lendablePercent"}},
		{"negative borrowing", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.BorrowingLimitPercent = ptrTo(int32(-1))
		},
			[]string{"Invalid value: spec.limited.borrowingLimitPercent"}},
		{"catch-all is fixed", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Name = flowcontrolv1.PriorityLevelConfigurationNameCatchAll
		},
			[]string{"Invalid value: spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := good()
			tt.mutate(pl)
			wantErrs(t, create(r, pl), tt.want...)
		})
	}
	t.Run("defaults", func(t *testing.T) {
		pl := good()
		wantErrs(t, create(r, pl))
		l := pl.Spec.Limited
		if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || *l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
			t.Errorf("defaults %+v %+v", l, l.LimitResponse.Queuing)
		}
		if row := cells(r, pl); row["Type"] != "Limited" || row["NominalConcurrencyShares"] != int64(30) || row["Queues"] != int64(64) {
			t.Errorf("row %v", row)
		}
	})
	t.Run("exempt may change only spec.exempt", func(t *testing.T) {
		pl := bootstrap.MandatoryPriorityLevelConfigurationExempt.DeepCopy()
		pl.Spec.Exempt.NominalConcurrencyShares = ptrTo(int32(10))
		wantErrs(t, create(r, pl))
	})
	t.Run("bootstrap objects are valid", func(t *testing.T) {
		for _, pl := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
			wantErrs(t, create(r, pl.DeepCopy()))
		}
	})
}
