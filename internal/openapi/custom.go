package openapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// customDocs are the documents of custom resources, which come and go
// with their CustomResourceDefinitions.
type customDocs struct {
	v2svc *handler.OpenAPIService
	v3svc *handler3.OpenAPIService
	// keys are the v3 group-version paths served now (a read-only set
	// replaced whole, read without a lock by every v3 request).
	keys atomic.Pointer[map[string]bool]
	// mu serializes SetCustom; generation numbers its calls for ETags.
	mu         sync.Mutex
	generation int
}

func (c *customDocs) served(key string) bool {
	if m := c.keys.Load(); m != nil {
		return (*m)[key]
	}
	return false
}

// CustomGroupVersion is the v3 document of one custom group-version. A
// nil Doc is served as a document without paths or schemas: the group
// version is listed, which is better than failing, until its schema can
// be built.
type CustomGroupVersion struct {
	GroupVersion schema.GroupVersion
	Doc          *spec3.OpenAPI
}

// SetCustom replaces the custom resources' documents: v2 are merged into
// the built-in v2 document (lazily, on the next request for it, with
// conflicting definitions renamed as upstream's aggregation does), and v3
// are served besides the built-in group-versions, which they may not
// replace.
func (o *OpenAPI) SetCustom(v2 []*spec.Swagger, v3 []CustomGroupVersion) {
	c := &o.custom
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	etag := strconv.Itoa(c.generation)
	keys := map[string]bool{}
	docs := map[string]*spec3.OpenAPI{}
	for _, gv := range v3 {
		key := gvPath(gv.GroupVersion)
		if _, builtin := o.v3[key]; builtin {
			continue
		}
		keys[key] = true
		docs[key] = mergeV3(docs[key], gv.Doc)
	}
	for key, doc := range docs {
		if doc == nil {
			doc = o.emptyV3()
		}
		c.v3svc.UpdateGroupVersion(key, doc)
	}
	if old := c.keys.Load(); old != nil {
		for key := range *old {
			if !keys[key] {
				c.v3svc.DeleteGroupVersion(key)
			}
		}
	}
	c.keys.Store(&keys)

	static, v2docs := o.v2, append([]*spec.Swagger(nil), v2...)
	if len(v2docs) == 0 {
		c.v2svc.UpdateSpecLazy(cached.Static(static, "builtin"))
		return
	}
	c.v2svc.UpdateSpecLazy(cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		merged, err := cloneSwagger(static)
		if err != nil {
			return nil, "", err
		}
		for _, d := range v2docs {
			if err := aggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(merged, d); err != nil {
				return nil, "", fmt.Errorf("openapi: merging a custom resource document: %w", err)
			}
		}
		return merged, "custom-" + etag, nil
	})))
}

// mergeV3 is the document of a group-version that several CRDs serve:
// their paths and schemas together (a schema two CRDs share, such as
// ObjectMeta, is the same in both).
func mergeV3(a, b *spec3.OpenAPI) *spec3.OpenAPI {
	if a == nil || b == nil {
		if a == nil {
			return b
		}
		return a
	}
	out := *a
	out.Paths = &spec3.Paths{Paths: map[string]*spec3.Path{}}
	out.Components = &spec3.Components{Schemas: map[string]*spec.Schema{}}
	for _, d := range []*spec3.OpenAPI{a, b} {
		if d.Paths != nil {
			for k, v := range d.Paths.Paths {
				out.Paths.Paths[k] = v
			}
		}
		if d.Components != nil {
			for k, v := range d.Components.Schemas {
				out.Components.Schemas[k] = v
			}
		}
	}
	return &out
}

// emptyV3 is a group-version document without paths or schemas.
func (o *OpenAPI) emptyV3() *spec3.OpenAPI {
	return &spec3.OpenAPI{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: o.cfg.Title, Version: o.cfg.Version}},
		Paths:      &spec3.Paths{Paths: map[string]*spec3.Path{}},
		Components: &spec3.Components{Schemas: map[string]*spec.Schema{}},
	}
}

// cloneSwagger deep-copies a document: the merge changes definitions it
// shares with the source (their group-version-kind lists).
func cloneSwagger(in *spec.Swagger) (*spec.Swagger, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out := &spec.Swagger{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// customKeys lists the served custom v3 paths, sorted (for tests).
func (o *OpenAPI) customKeys() []string {
	var out []string
	if m := o.custom.keys.Load(); m != nil {
		for k := range *m {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
