package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// codecSet holds the serializers the server speaks. Objects handed to them
// always carry their TypeMeta already (set once when decoded from storage),
// so encoders never mutate shared cached objects.
type codecSet struct {
	factory serializer.CodecFactory
	json    runtime.SerializerInfo
	yaml    runtime.SerializerInfo
	proto   runtime.SerializerInfo
	// storage is the protobuf serializer used for values in the store.
	storage runtime.Serializer
}

func newCodecSet(scheme *runtime.Scheme) *codecSet {
	f := serializer.NewCodecFactory(scheme, serializer.EnablePretty,
		serializer.WithStreamingCollectionEncodingToJSON(),
		serializer.WithStreamingCollectionEncodingToProtobuf())
	c := &codecSet{factory: f, storage: protobuf.NewSerializer(scheme, scheme)}
	for _, info := range f.SupportedMediaTypes() {
		switch info.MediaType {
		case runtime.ContentTypeJSON:
			c.json = info
		case runtime.ContentTypeYAML:
			c.yaml = info
		case runtime.ContentTypeProtobuf:
			c.proto = info
		}
	}
	return c
}

func (c *codecSet) byType(typ, subtype string) (runtime.SerializerInfo, bool) {
	switch {
	case typ == "application" && subtype == "json", typ == "*" && subtype == "*", typ == "application" && subtype == "*":
		return c.json, true
	case typ == "application" && subtype == "yaml":
		return c.yaml, true
	case typ == "application" && subtype == "vnd.kubernetes.protobuf":
		return c.proto, true
	}
	return runtime.SerializerInfo{}, false
}

// byContentType finds the decoder for a request body's Content-Type.
func (c *codecSet) byContentType(mediaType string) (runtime.SerializerInfo, bool) {
	switch mediaType {
	case runtime.ContentTypeJSON, "":
		return c.json, true
	case runtime.ContentTypeYAML:
		return c.yaml, true
	case runtime.ContentTypeProtobuf:
		return c.proto, true
	}
	return runtime.SerializerInfo{}, false
}

// optionsVersion is the group version query parameters (ListOptions,
// GetOptions, DeleteOptions) are decoded as; every API group registers them
// for core v1.
var optionsVersion = schema.GroupVersion{Version: "v1"}
