package openapi

import (
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
)

// builtinDefinitions are the definitions of every built-in kind: the
// k8s.io/api ones generated here, and the CustomResourceDefinition types,
// which upstream generates in apiextensions-apiserver (the two sets share
// the apimachinery definitions, which are the same).
func builtinDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := GetOpenAPIDefinitions(ref)
	for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	return defs
}
