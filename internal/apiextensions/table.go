package apiextensions

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/klog/v2"
)

// Table is kubectl's columns for a version: NAME, the
// additionalPrinterColumns, and AGE when none is given. It satisfies
// internal/registry's TableConvertor and is safe for concurrent use.
type Table struct {
	columns []metav1.TableColumnDefinition
	// convertors holds upstream's table convertors for the version. One
	// is not safe for concurrent use (its parsed JSON paths keep state
	// while they evaluate), so each call takes its own from the pool.
	convertors sync.Pool
}

// ageColumn is upstream's default column of a version without
// additionalPrinterColumns.
var ageColumn = apiextensionsv1.CustomResourceColumnDefinition{
	Name:        "Age",
	Type:        "date",
	Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
	JSONPath:    ".metadata.creationTimestamp",
}

// NewTable builds the columns of crd's version. A column whose JSON path
// does not parse (CRD validation refuses those) makes the table fall back
// to the NAME column alone, as upstream does.
func NewTable(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Table, error) {
	var columns []apiextensionsv1.CustomResourceColumnDefinition
	found := false
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			columns, found = v.AdditionalPrinterColumns, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("apiextensions: %s has no version %q", crd.Name, version)
	}
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{ageColumn}
	}
	newConvertor := func() rest.TableConvertor {
		c, err := tableconvertor.New(columns)
		if err != nil {
			klog.V(2).InfoS("apiextensions: invalid printer columns, falling back to default printing", "crd", crd.Name, "version", version, "err", err)
		}
		return c
	}
	first := newConvertor()
	t := &Table{}
	t.convertors.New = func() any { return newConvertor() }
	t.convertors.Put(first)
	table, err := first.ConvertToTable(context.Background(), &metav1.PartialObjectMetadata{}, nil)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: table columns of %s %s: %w", crd.Name, version, err)
	}
	t.columns = table.ColumnDefinitions
	return t, nil
}

// Columns are the table's column definitions.
func (t *Table) Columns() []metav1.TableColumnDefinition { return t.columns }

// Cells are one object's row: the name, then each column's value as
// upstream's tableconvertor formats it (nil for a missing field).
func (t *Table) Cells(obj runtime.Object) []interface{} {
	c := t.convertors.Get().(rest.TableConvertor)
	defer t.convertors.Put(c)
	table, err := c.ConvertToTable(context.Background(), obj, &metav1.TableOptions{NoHeaders: true})
	if err != nil || len(table.Rows) == 0 {
		cells := make([]interface{}, len(t.columns))
		return cells
	}
	return table.Rows[0].Cells
}

// SelectableFields returns the field-selector values of an object of
// crd's version: the version's selectableFields (metadata.name and
// metadata.namespace are the server's). Each is named by its JSON path
// without the leading dot and valued as upstream formats it (fmt.Sprint
// of the value, "" when absent). The function is safe for concurrent use.
func SelectableFields(crd *apiextensionsv1.CustomResourceDefinition, version string) (func(obj runtime.Object) fields.Set, error) {
	var selectable []apiextensionsv1.SelectableField
	found := false
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			selectable, found = v.SelectableFields, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("apiextensions: %s has no version %q", crd.Name, version)
	}
	names := make([]string, len(selectable))
	parse := func() ([]*jsonpath.JSONPath, error) {
		paths := make([]*jsonpath.JSONPath, len(selectable))
		for i, sf := range selectable {
			p := jsonpath.New("selectableField")
			p.AllowMissingKeys(true)
			if err := p.Parse("{" + sf.JSONPath + "}"); err != nil {
				return nil, fmt.Errorf("apiextensions: selectable field %q of %s %s: %w", sf.JSONPath, crd.Name, version, err)
			}
			paths[i] = p
		}
		return paths, nil
	}
	first, err := parse()
	if err != nil {
		return nil, err
	}
	for i, sf := range selectable {
		names[i] = strings.TrimPrefix(sf.JSONPath, ".")
	}
	// A parsed JSON path keeps state while it evaluates; each call takes
	// its own set from the pool.
	pool := &sync.Pool{New: func() any {
		paths, _ := parse() // parsed once above, cannot fail now
		return &paths
	}}
	pool.Put(&first)
	return func(obj runtime.Object) fields.Set {
		set := make(fields.Set, len(names))
		u, ok := obj.(runtime.Unstructured)
		if !ok {
			for _, n := range names {
				set[n] = ""
			}
			return set
		}
		content := u.UnstructuredContent()
		paths := pool.Get().(*[]*jsonpath.JSONPath)
		defer pool.Put(paths)
		for i, p := range *paths {
			set[names[i]] = selectableValue(p, content)
		}
		return set
	}, nil
}

// selectableValue is upstream's formatting of one selectable field. A
// path with several results (impossible for the scalar fields CRD
// validation allows) is an error upstream; here it selects nothing.
func selectableValue(p *jsonpath.JSONPath, content map[string]interface{}) string {
	results, err := p.FindResults(content)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return ""
	}
	if len(results) > 1 || len(results[0]) > 1 {
		return ""
	}
	value := results[0][0].Interface()
	if value == nil {
		return ""
	}
	return fmt.Sprint(value)
}
