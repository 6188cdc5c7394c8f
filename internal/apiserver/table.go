package apiserver

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	tableTypeMeta       = metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}
	partialMetaTypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
	partialListTypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}
	defaultTableColumns = []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}, {Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}}
)

// transform turns one object into the negotiated output kind.
func (h *resourceHandler) transform(choice mediaChoice, obj runtime.Object) (runtime.Object, error) {
	switch choice.kind {
	case outputTable:
		t := h.newTable()
		row, err := h.tableRow(choice, obj)
		if err != nil {
			return nil, err
		}
		t.Rows = []metav1.TableRow{row}
		if m, err := meta.Accessor(obj); err == nil {
			t.ResourceVersion = m.GetResourceVersion()
		}
		return t, nil
	case outputMetadata:
		return partialMetadata(obj)
	}
	return obj, nil
}

func (h *resourceHandler) newTable() *metav1.Table {
	t := &metav1.Table{TypeMeta: tableTypeMeta}
	if h.res.Table != nil {
		t.ColumnDefinitions = h.res.Table.Columns()
	} else {
		t.ColumnDefinitions = defaultTableColumns
	}
	return t
}

// tableRow renders obj as one row; the row's object is its metadata (or
// the whole object) as includeObject asks, so kubectl can show names,
// namespaces and labels.
func (h *resourceHandler) tableRow(choice mediaChoice, obj runtime.Object) (metav1.TableRow, error) {
	var row metav1.TableRow
	if h.res.Table != nil {
		row.Cells = h.res.Table.Cells(obj)
	} else {
		m, err := meta.Accessor(obj)
		if err != nil {
			return row, err
		}
		row.Cells = []interface{}{m.GetName(), m.GetCreationTimestamp().Time.UTC().Format("2006-01-02T15:04:05Z")}
	}
	switch choice.includeObject {
	case "None":
	case "Object":
		row.Object = runtime.RawExtension{Object: obj}
	default:
		pm, err := partialMetadata(obj)
		if err != nil {
			return row, err
		}
		row.Object = runtime.RawExtension{Object: pm}
	}
	return row, nil
}

func partialMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	pm := &metav1.PartialObjectMetadata{TypeMeta: partialMetaTypeMeta}
	pm.ObjectMeta = metav1.ObjectMeta{
		Name: m.GetName(), GenerateName: m.GetGenerateName(), Namespace: m.GetNamespace(),
		UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), Labels: m.GetLabels(),
		Annotations: m.GetAnnotations(), OwnerReferences: m.GetOwnerReferences(),
		Finalizers: m.GetFinalizers(), ManagedFields: m.GetManagedFields(),
	}
	return pm, nil
}
