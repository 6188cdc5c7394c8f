package apiserver

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiextensions"
)

// FuzzCustomResourceCodec feeds stored values to the custom resource
// codec: it must return an error or an object that encodes again, never
// panic.
func FuzzCustomResourceCodec(f *testing.F) {
	crd := testCRD()
	crd.Status.AcceptedNames = crd.Spec.Names
	conv, err := apiextensions.NewConverter(crd, apiextensions.ConverterOptions{})
	if err != nil {
		f.Fatal(err)
	}
	sch, err := apiextensions.NewSchema(crd, "v1")
	if err != nil {
		f.Fatal(err)
	}
	c := &crCodec{}
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	c.state.Store(&crCodecState{served: gv, storage: gv, conv: conv, schema: sch})
	for _, seed := range []string{
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"default"},"spec":{"color":"red"}}`,
		`{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"a"}}`,
		`{"kind":"Widget"}`, `{}`, `[]`, `null`, `{"apiVersion":1}`, `{"metadata":"x","kind":"W","apiVersion":"a/b"}`, "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, _, err := c.Decode(data, nil, nil)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := c.Encode(obj, &buf); err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", data, err)
		}
	})
}
