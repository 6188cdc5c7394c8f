package apiextensions

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func fromUnstructured(u *unstructured.Unstructured, into interface{}) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
