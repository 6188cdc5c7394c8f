package registry

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// clock is the time source AGE columns are measured against.
type clock func() time.Time

// since renders a timestamp the way kubectl's printers do.
func (c clock) since(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(c().Sub(t.Time))
}

// table is a TableConvertor from column definitions and a typed row func.
type table[T runtime.Object] struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj T) []interface{}
}

func (t table[T]) Columns() []metav1.TableColumnDefinition {
	return append([]metav1.TableColumnDefinition(nil), t.columns...)
}

func (t table[T]) Cells(obj runtime.Object) []interface{} { return t.cells(obj.(T)) }

// Column helpers; descriptions follow upstream's printers where they quote
// the API documentation.
func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

func col(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

// wide marks a column as shown only with -o wide.
func wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

// createdAtTable is upstream's printer for RBAC roles and limit ranges,
// which show the creation timestamp rather than an age.
func createdAtTable[T object]() TableConvertor {
	return table[T]{
		columns: []metav1.TableColumnDefinition{nameColumn(), col("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"])},
		cells: func(o T) []interface{} {
			return []interface{}{o.GetName(), o.GetCreationTimestamp().UTC().Format(time.RFC3339)}
		},
	}
}

// orNone renders an empty cell as kubectl does.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
