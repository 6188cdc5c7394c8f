package registry

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// NewScheme returns a fresh scheme holding every served group's types, the
// meta.k8s.io/v1 types (Table, PartialObjectMetadata, Status, options) and
// autoscaling/v1 for the scale subresource. Each call builds a new scheme so
// nothing is shared between servers or tests.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	// The unversioned meta types (Status, WatchEvent, list/get options)
	// under "v1", as client-go's scheme does.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// Request options as kubectl sends them in bodies (DeleteOptions with
	// apiVersion meta.k8s.io/v1).
	s.AddKnownTypes(metav1.SchemeGroupVersion, &metav1.DeleteOptions{}, &metav1.ListOptions{}, &metav1.GetOptions{},
		&metav1.CreateOptions{}, &metav1.UpdateOptions{}, &metav1.PatchOptions{})
	adders := []func(*runtime.Scheme) error{
		metav1.AddMetaToScheme,
		corev1.AddToScheme,
		appsv1.AddToScheme,
		authenticationv1.AddToScheme,
		authorizationv1.AddToScheme,
		autoscalingv1.AddToScheme,
		autoscalingv2.AddToScheme,
		batchv1.AddToScheme,
		certificatesv1.AddToScheme,
		coordinationv1.AddToScheme,
		discoveryv1.AddToScheme,
		eventsv1.AddToScheme,
		flowcontrolv1.AddToScheme,
		networkingv1.AddToScheme,
		nodev1.AddToScheme,
		policyv1.AddToScheme,
		rbacv1.AddToScheme,
		schedulingv1.AddToScheme,
		storagev1.AddToScheme,
		admissionregistrationv1.AddToScheme,
		apiregistrationv1.AddToScheme,
		apiextensionsv1.AddToScheme,
	}
	for _, add := range adders {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	if err := addConversions(s); err != nil {
		return nil, err
	}
	return s, nil
}
