package registry

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// API Priority and Fairness configuration (flowcontrol.apiserver.k8s.io/v1):
// FlowSchemas classify requests, PriorityLevelConfigurations say how much of
// the server's concurrency each class gets. The dispatcher that reads them
// is package apiserver/flowcontrol; this file and flowcontrol_validation.go
// are the API's rules, written from upstream's
// pkg/apis/flowcontrol/{v1/defaults.go,validation} and
// pkg/registry/flowcontrol strategies.

const flowcontrolGroup = "flowcontrol.apiserver.k8s.io"

// Upstream's v1 defaults (pkg/apis/flowcontrol/v1/defaults.go).
const (
	flowSchemaDefaultMatchingPrecedence int32 = 1000
	plcDefaultHandSize                  int32 = 8
	plcDefaultQueues                    int32 = 64
	plcDefaultQueueLengthLimit          int32 = 50
	plcDefaultNominalConcurrencyShares  int32 = 30
)

func flowSchemaResource(c clock) *Resource {
	gv := v1(flowcontrolGroup)
	s := strategy[*flowcontrolv1.FlowSchema]{behavior[*flowcontrolv1.FlowSchema]{
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *flowcontrolv1.FlowSchema) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(fs *flowcontrolv1.FlowSchema) { fs.Status = flowcontrolv1.FlowSchemaStatus{} },
		keepStatus:  func(obj, old *flowcontrolv1.FlowSchema) { obj.Status = old.Status },
		keepSpec:    func(obj, old *flowcontrolv1.FlowSchema) { obj.Spec = old.Spec },
		defaults:    DefaultFlowSchema,
		validate:    validateFlowSchema,
		validateStatus: func(obj, _ *flowcontrolv1.FlowSchema) field.ErrorList {
			return validateFlowSchemaStatus(&obj.Status)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "FlowSchema",
		Resource:         "flowschemas",
		SingularName:     "flowschema",
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
		NewList:          func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*flowcontrolv1.FlowSchema]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
				col("MatchingPrecedence", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]),
				col("DistinguisherMethod", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]),
				ageColumn(),
				col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
			},
			cells: func(fs *flowcontrolv1.FlowSchema) []interface{} {
				dm := "<none>"
				if fs.Spec.DistinguisherMethod != nil {
					dm = string(fs.Spec.DistinguisherMethod.Type)
				}
				missing := "?"
				for _, cond := range fs.Status.Conditions {
					if cond.Type == flowcontrolv1.FlowSchemaConditionDangling {
						missing = string(cond.Status)
						break
					}
				}
				return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), dm, c.since(fs.CreationTimestamp), missing}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "flowschemas"),
	}
}

func priorityLevelConfigurationResource(c clock) *Resource {
	gv := v1(flowcontrolGroup)
	s := strategy[*flowcontrolv1.PriorityLevelConfiguration]{behavior[*flowcontrolv1.PriorityLevelConfiguration]{
		name: apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *flowcontrolv1.PriorityLevelConfiguration) bool {
			return semanticChanged(obj.Spec, old.Spec)
		},
		resetStatus: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
		},
		keepStatus: func(obj, old *flowcontrolv1.PriorityLevelConfiguration) { obj.Status = old.Status },
		keepSpec:   func(obj, old *flowcontrolv1.PriorityLevelConfiguration) { obj.Spec = old.Spec },
		defaults:   DefaultPriorityLevelConfiguration,
		validate:   validatePriorityLevelConfiguration,
		validateStatus: func(obj, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
			return validatePLCStatus(&obj.Status)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "PriorityLevelConfiguration",
		Resource:         "prioritylevelconfigurations",
		SingularName:     "prioritylevelconfiguration",
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
		NewList:          func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*flowcontrolv1.PriorityLevelConfiguration]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Type", "string", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
				col("NominalConcurrencyShares", "string", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
				col("Queues", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]),
				col("HandSize", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]),
				col("QueueLengthLimit", "string", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]),
				ageColumn(),
			},
			cells: func(pl *flowcontrolv1.PriorityLevelConfiguration) []interface{} {
				var ncs, queues, handSize, qll interface{} = "<none>", "<none>", "<none>", "<none>"
				if l := pl.Spec.Limited; l != nil {
					if l.NominalConcurrencyShares != nil {
						ncs = int64(*l.NominalConcurrencyShares)
					}
					if q := l.LimitResponse.Queuing; q != nil {
						queues, handSize, qll = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
					}
				}
				return []interface{}{pl.Name, string(pl.Spec.Type), ncs, queues, handSize, qll, c.since(pl.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "prioritylevelconfigurations"),
	}
}

// DefaultFlowSchema applies upstream's v1 defaults to fs in place.
func DefaultFlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = flowSchemaDefaultMatchingPrecedence
	}
}

// DefaultPriorityLevelConfiguration applies upstream's v1 defaults to pl
// in place. The bootstrap objects are compared with stored ones after
// both went through it, so the comparison is not fooled by a default.
func DefaultPriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptrTo(int32(0))
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptrTo(int32(0))
		}
	}
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptrTo(plcDefaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptrTo(int32(0))
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = plcDefaultHandSize
			}
			if q.Queues == 0 {
				q.Queues = plcDefaultQueues
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = plcDefaultQueueLengthLimit
			}
		}
	}
}
