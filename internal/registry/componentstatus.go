package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// componentStatusResource serves core/v1 componentstatuses, upstream's
// deprecated health summary of the control plane. Nothing is stored: the
// API server computes each object when it is read (see the apiserver's
// componentstatus.go), so only get and list are served and the strategy
// is never used for a write.
func componentStatusResource() *Resource {
	gv := v1(coreGroup)
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ComponentStatus",
		Resource:         "componentstatuses",
		SingularName:     "componentstatus",
		ShortNames:       []string{"cs"},
		Verbs:            []string{"get", "list"},
		New:              func() runtime.Object { return &corev1.ComponentStatus{} },
		NewList:          func() runtime.Object { return &corev1.ComponentStatusList{} },
		Strategy:         strategy[*corev1.ComponentStatus]{behavior[*corev1.ComponentStatus]{name: apivalidation.NameIsDNSSubdomain}},
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*corev1.ComponentStatus]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Status", "string", "Status of the component conditions"),
				col("Message", "string", "Message of the component conditions"),
				col("Error", "string", "Error of the component conditions"),
			},
			cells: componentStatusCells,
		},
		StorageKeyPrefix: storagePrefix(gv, "componentstatuses"),
	}
}

// componentStatusCells is upstream's printComponentStatus: the first
// Healthy condition decides the status.
func componentStatusCells(cs *corev1.ComponentStatus) []interface{} {
	status, message, errText := "Unknown", "", ""
	for _, c := range cs.Conditions {
		if c.Type != corev1.ComponentHealthy {
			continue
		}
		status = "Unhealthy"
		if c.Status == corev1.ConditionTrue {
			status = "Healthy"
		}
		message, errText = c.Message, c.Error
		break
	}
	return []interface{}{cs.Name, status, message, errText}
}
