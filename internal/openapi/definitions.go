package openapi

import (
	"strings"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
)

// builtinDefinitions are the definitions of every built-in kind: the
// k8s.io/api ones generated here, the CustomResourceDefinition types,
// which upstream generates in apiextensions-apiserver, and the
// apiregistration.k8s.io models kube-aggregator publishes generated. The
// other two packages repeat apimachinery's definitions, which this
// package's generated file already has.
func builtinDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := GetOpenAPIDefinitions(ref)
	for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	for name, def := range aggregatoropenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok && strings.HasPrefix(name, "io.k8s.kube-aggregator.") {
			defs[name] = def
		}
	}
	return defs
}
