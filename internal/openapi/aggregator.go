package openapi

import "k8s.io/apimachinery/pkg/runtime/schema"

// apiRegistrationGroup's types live in kube-aggregator, not k8s.io/api,
// and their model names say so.
const apiRegistrationGroup = "apiregistration.k8s.io"

func aggregatorModelName(gvk schema.GroupVersionKind) string {
	return "io.k8s.kube-aggregator.pkg.apis.apiregistration." + gvk.Version + "." + gvk.Kind
}
