package registry

import (
	"context"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/apiextensions"
)

// CustomResource describes one served version of a CRD as a Resource, under
// the names the CRD has been granted (status.acceptedNames). Objects are
// *unstructured.Unstructured; the strategy prunes, defaults and validates
// them with the version's schema as upstream's customresource strategy
// does, and the schema is returned for the caller's other uses (server-side
// apply types, defaulting on read).
func CustomResource(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Resource, *apiextensions.Schema, error) {
	var ver *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			ver = &crd.Spec.Versions[i]
		}
	}
	if ver == nil {
		return nil, nil, fmt.Errorf("registry: %s has no version %q", crd.Name, version)
	}
	sch, err := apiextensions.NewSchema(crd, version)
	if err != nil {
		return nil, nil, fmt.Errorf("registry: schema of %s %s: %w", crd.Name, version, err)
	}
	tbl, err := apiextensions.NewTable(crd, version)
	if err != nil {
		return nil, nil, fmt.Errorf("registry: columns of %s %s: %w", crd.Name, version, err)
	}
	selectable, err := apiextensions.SelectableFields(crd, version)
	if err != nil {
		return nil, nil, fmt.Errorf("registry: selectable fields of %s %s: %w", crd.Name, version, err)
	}
	names := crd.Status.AcceptedNames
	// Upstream's defaults (apiextensions.DefaultCRD sets them on write;
	// a CRD stored before it did still has to serve).
	if names.ListKind == "" {
		names.ListKind = names.Kind + "List"
	}
	if names.Singular == "" {
		names.Singular = strings.ToLower(names.Kind)
	}
	gv := schema.GroupVersion{Group: crd.Spec.Group, Version: version}
	gvk, listGVK := gv.WithKind(names.Kind), gv.WithKind(names.ListKind)
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	st := &crStrategy{schema: sch, namespaced: namespaced, kind: gvk}
	r := &Resource{
		GroupVersion: gv,
		Kind:         names.Kind,
		Resource:     names.Plural,
		SingularName: names.Singular,
		Namespaced:   namespaced,
		ShortNames:   append([]string(nil), names.ShortNames...),
		Categories:   append([]string(nil), names.Categories...),
		Verbs:        allVerbs(),
		New: func() runtime.Object {
			u := &unstructured.Unstructured{Object: map[string]interface{}{}}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
			l.SetGroupVersionKind(listGVK)
			return l
		},
		Strategy:         st,
		SelectableFields: selectable,
		Table:            tbl,
		// Upstream's layout for custom resources is the built-ins' rule:
		// /registry/<group>/<plural>, one prefix for every version.
		StorageKeyPrefix: "/" + crd.Spec.Group + "/" + names.Plural,
	}
	if sub := ver.Subresources; sub != nil {
		if sub.Status != nil {
			st.status = true
			r.Subresources = append(r.Subresources, "status")
			r.Status = crStatusStrategy{st}
		}
		if sub.Scale != nil {
			r.Subresources = append(r.Subresources, "scale")
			r.Scale = crScale(sub.Scale)
		}
	}
	return r, sch, nil
}

// crStrategy is upstream's customresource strategy over a schema.
type crStrategy struct {
	schema     *apiextensions.Schema
	namespaced bool
	// status: the version has a status subresource, so the main resource
	// does not write status and status changes bump no generation.
	status bool
	kind   schema.GroupVersionKind
}

func (s *crStrategy) PrepareForCreate(_ context.Context, o runtime.Object) {
	u := o.(*unstructured.Unstructured)
	if s.status {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
	s.schema.Prune(u.Object)
	s.schema.Default(u.Object)
}

func (s *crStrategy) PrepareForUpdate(_ context.Context, o, oldObj runtime.Object) {
	u, old := o.(*unstructured.Unstructured), oldObj.(*unstructured.Unstructured)
	if s.status {
		if st, ok := old.Object["status"]; ok {
			u.Object["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(u.Object, "status")
		}
	}
	s.schema.Prune(u.Object)
	s.schema.Default(u.Object)
	u.SetGeneration(old.GetGeneration())
	if s.specChanged(u, old) {
		u.SetGeneration(old.GetGeneration() + 1)
	}
}

// specChanged is upstream's rule: anything but metadata (and status, when
// it has its own subresource) changed.
func (s *crStrategy) specChanged(u, old *unstructured.Unstructured) bool {
	for k, v := range u.Object {
		if k == "metadata" || (s.status && k == "status") {
			continue
		}
		if ov, ok := old.Object[k]; !ok || !apiequality.Semantic.DeepEqual(v, ov) {
			return true
		}
	}
	for k := range old.Object {
		if k == "metadata" || (s.status && k == "status") {
			continue
		}
		if _, ok := u.Object[k]; !ok {
			return true
		}
	}
	return false
}

func (s *crStrategy) Validate(ctx context.Context, o runtime.Object) field.ErrorList {
	u := o.(*unstructured.Unstructured)
	errs := apivalidation.ValidateObjectMetaAccessor(u, s.namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, s.validateKind(u)...)
	return append(errs, s.schema.Validate(ctx, u.Object, nil)...)
}

func (s *crStrategy) ValidateUpdate(ctx context.Context, o, oldObj runtime.Object) field.ErrorList {
	u, old := o.(*unstructured.Unstructured), oldObj.(*unstructured.Unstructured)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(u, old, field.NewPath("metadata"))
	errs = append(errs, s.validateKind(u)...)
	return append(errs, s.schema.Validate(ctx, u.Object, old.Object)...)
}

// validateKind is upstream's check that the object says what it is.
func (s *crStrategy) validateKind(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != s.kind.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", s.kind.Kind)))
	}
	if u.GetAPIVersion() != s.kind.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", s.kind.GroupVersion())))
	}
	return errs
}

// crStatusStrategy is the status subresource: only status changes.
type crStatusStrategy struct{ s *crStrategy }

func (c crStatusStrategy) PrepareForStatusUpdate(_ context.Context, o, oldObj runtime.Object) {
	u, old := o.(*unstructured.Unstructured), oldObj.(*unstructured.Unstructured)
	status, ok := u.Object["status"]
	// managedFields were computed for this write; keep them.
	managed := u.GetManagedFields()
	rv := u.GetResourceVersion()
	u.Object = runtime.DeepCopyJSON(old.Object)
	u.SetManagedFields(managed)
	u.SetResourceVersion(rv)
	if ok {
		u.Object["status"] = status
	} else {
		delete(u.Object, "status")
	}
	c.s.schema.Prune(u.Object)
	c.s.schema.Default(u.Object)
}

func (c crStatusStrategy) ValidateStatusUpdate(ctx context.Context, o, oldObj runtime.Object) field.ErrorList {
	u, old := o.(*unstructured.Unstructured), oldObj.(*unstructured.Unstructured)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(u, old, field.NewPath("metadata"))
	return append(errs, c.s.schema.ValidateStatus(ctx, u.Object, old.Object)...)
}

// crScale reads and writes replicas at the paths the CRD names
// (".spec.replicas"-style JSON paths of plain fields, as upstream allows).
func crScale(sc *apiextensionsv1.CustomResourceSubresourceScale) *ScaleAccessor {
	specPath, statusPath := jsonPath(sc.SpecReplicasPath), jsonPath(sc.StatusReplicasPath)
	var selectorPath []string
	if sc.LabelSelectorPath != nil {
		selectorPath = jsonPath(*sc.LabelSelectorPath)
	}
	return &ScaleAccessor{
		Scale: func(obj runtime.Object) *autoscalingv1.Scale {
			u := obj.(*unstructured.Unstructured)
			out := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{
				Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
				ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(),
			}}
			if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, specPath...); ok {
				out.Spec.Replicas = int32(toInt64(v))
			}
			if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, statusPath...); ok {
				out.Status.Replicas = int32(toInt64(v))
			}
			if selectorPath != nil {
				if v, ok, _ := unstructured.NestedString(u.Object, selectorPath...); ok {
					out.Status.Selector = v
				}
			}
			return out
		},
		SetReplicas: func(obj runtime.Object, replicas int32) {
			u := obj.(*unstructured.Unstructured)
			_ = unstructured.SetNestedField(u.Object, int64(replicas), specPath...)
		},
	}
}

// jsonPath splits ".spec.replicas" into its fields.
func jsonPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

func toInt64(v interface{}) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}
