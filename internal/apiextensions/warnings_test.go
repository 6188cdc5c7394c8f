package apiextensions

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestDeprecationWarning(t *testing.T) {
	crd := widgetCRD(t)
	if w := DeprecationWarning(crd, "v1"); w != "" {
		t.Errorf("undeprecated version warns %q", w)
	}
	crd.Spec.Versions[0].Deprecated = true
	if w, want := DeprecationWarning(crd, "v1"), "example.com/v1 Widget is deprecated; use example.com/v2 Widget"; w != want {
		t.Errorf("warning %q, want %q", w, want)
	}
	crd.Spec.Versions[1].Deprecated = true
	if w, want := DeprecationWarning(crd, "v1"), "example.com/v1 Widget is deprecated"; w != want {
		t.Errorf("warning %q, want %q", w, want)
	}
	custom := "widgets v1 are going away"
	crd.Spec.Versions[0].DeprecationWarning = &custom
	if w := DeprecationWarning(crd, "v1"); w != custom {
		t.Errorf("warning %q, want %q", w, custom)
	}
}

func TestCRDWarnings(t *testing.T) {
	crd := widgetCRD(t)
	if w := CRDWarnings(crd, nil); len(w) != 0 {
		t.Errorf("warnings of a clean CRD: %q", w)
	}
	bad := crd.DeepCopy()
	specProp(bad, "name", func(p *apiextensionsv1.JSONSchemaProps) { p.Format = "no-such-format" })
	specProp(bad, "tags", func(p *apiextensionsv1.JSONSchemaProps) {
		p.Items.Schema = &apiextensionsv1.JSONSchemaProps{Type: "object"}
	})
	want := []string{
		`unrecognized format "no-such-format"`,
		`x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL validation rules`,
	}
	if w := CRDWarnings(bad, nil); !reflect.DeepEqual(w, want) {
		t.Errorf("warnings %q, want %q", w, want)
	}
	if w := CRDWarnings(bad, crd); !reflect.DeepEqual(w, want) {
		t.Errorf("warnings of an update introducing them %q, want %q", w, want)
	}
	if w := CRDWarnings(bad, bad); len(w) != 0 {
		t.Errorf("warnings the old CRD already had: %q", w)
	}
}
