package openapi

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"
)

// definitions is GetOpenAPIDefinitions plus the apiregistration.k8s.io
// models kube-aggregator publishes generated (its package also repeats
// apimachinery's, which this package's generated file already has).
func definitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := GetOpenAPIDefinitions(ref)
	for name, def := range aggregatoropenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok && strings.HasPrefix(name, "io.k8s.kube-aggregator.") {
			defs[name] = def
		}
	}
	return defs
}

// apiRegistrationGroup's types live in kube-aggregator, not k8s.io/api,
// and their model names say so.
const apiRegistrationGroup = "apiregistration.k8s.io"

func aggregatorModelName(gvk schema.GroupVersionKind) string {
	return "io.k8s.kube-aggregator.pkg.apis.apiregistration." + gvk.Version + "." + gvk.Kind
}
