package apiextensions

import (
	"fmt"
	"sort"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// DeprecationWarning is the warning every request for a deprecated
// version of crd carries (upstream's custom resource handler): the
// version's deprecationWarning, or "GROUP/VERSION KIND is deprecated" with
// the newest served non-deprecated version to use instead. It is "" for a
// version that is not deprecated.
func DeprecationWarning(crd *apiextensionsv1.CustomResourceDefinition, v string) string {
	for _, ver := range crd.Spec.Versions {
		if ver.Name != v || !ver.Deprecated {
			continue
		}
		if ver.DeprecationWarning != nil {
			return *ver.DeprecationWarning
		}
		msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, v, crd.Spec.Names.Kind)
		var newer []string
		for _, o := range crd.Spec.Versions {
			if o.Served && !o.Deprecated && version.CompareKubeAwareVersionStrings(v, o.Name) < 0 {
				newer = append(newer, o.Name)
			}
		}
		if len(newer) == 0 {
			return msg
		}
		sort.Slice(newer, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(newer[i], newer[j]) > 0 })
		return msg + fmt.Sprintf("; use %s/%s %s", crd.Spec.Group, newer[0], crd.Spec.Names.Kind)
	}
	return ""
}

// CRDWarnings are the warnings of a CRD write (upstream's CRD strategy
// WarningsOnCreate/WarningsOnUpdate): formats the server does not
// recognize, and list-type set of objects or lists, which apply and CEL do
// not support. On update (old non-nil) only warnings old did not have are
// returned.
func CRDWarnings(crd, old *apiextensionsv1.CustomResourceDefinition) []string {
	internal, errs := toInternal(crd)
	if errs != nil {
		return nil
	}
	formats, sets := crdWarnings(&internal.Spec)
	if old != nil {
		if internalOld, errs := toInternal(old); errs == nil {
			oldFormats, oldSets := crdWarnings(&internalOld.Spec)
			formats, sets = without(formats, oldFormats), without(sets, oldSets)
		}
	}
	var warnings []string
	for _, f := range formats {
		warnings = append(warnings, fmt.Sprintf("unrecognized format %q", f))
	}
	return append(warnings, sets...)
}

// crdWarnings returns the unrecognized formats (in schema order, repeats
// kept, as upstream) and the sorted set-type warnings of spec.
func crdWarnings(crdSpec *apiextensionsinternal.CustomResourceDefinitionSpec) (formats, setWarnings []string) {
	compat := environment.DefaultCompatibilityVersion()
	seen := sets.New[string]()
	visit := func(s *apiextensionsinternal.JSONSchemaProps) bool {
		if len(s.Format) > 0 {
			specSchema := &spec.Schema{SchemaProps: spec.SchemaProps{Format: s.Format, Type: []string{s.Type}}}
			formats = append(formats, apiservervalidation.GetUnrecognizedFormats(specSchema, compat)...)
		}
		if s.XListType != nil && *s.XListType == "set" && s.Items != nil && s.Items.Schema != nil {
			switch s.Items.Schema.Type {
			case "object", "array":
				seen.Insert(fmt.Sprintf("x-kubernetes-list-type: set for items of type %q is not supported by server-side apply or CEL validation rules", s.Items.Schema.Type))
			}
		}
		return false // visit every schema
	}
	if crdSpec.Validation != nil && crdSpec.Validation.OpenAPIV3Schema != nil {
		crdvalidation.SchemaHas(crdSpec.Validation.OpenAPIV3Schema, visit)
	}
	for _, v := range crdSpec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			crdvalidation.SchemaHas(v.Schema.OpenAPIV3Schema, visit)
		}
	}
	return formats, sets.List(seen)
}

func without(list, old []string) []string {
	had := sets.New(old...)
	var out []string
	for _, s := range list {
		if !had.Has(s) {
			out = append(out, s)
		}
	}
	return out
}
