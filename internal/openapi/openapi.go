package openapi

import (
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Config says what New builds documents for.
type Config struct {
	// Definitions returns every OpenAPI definition by model name. Nil means
	// the generated GetOpenAPIDefinitions of this package with the
	// apiregistration.k8s.io and apiextensions.k8s.io ones (definitions.go).
	Definitions common.GetOpenAPIDefinitions
	// Resources are the served resources; at least one.
	Resources []Resource
	// Title of the documents' info section; default "Kubernetes".
	Title string
	// Version of the documents' info section (upstream puts the server's
	// git version there); default "unversioned".
	Version string
}

// ErrNoResources is returned by New for a Config without resources.
var ErrNoResources = errors.New("openapi: no resources")

// OpenAPI holds the documents built for one set of served resources. The
// built-in documents are immutable after New; the custom resources'
// documents are replaced by SetCustom (custom.go). It is safe for
// concurrent use.
type OpenAPI struct {
	cfg Config
	// gvks is the x-kubernetes-group-version-kind extension of each
	// definition that has one, by model name.
	gvks map[string][]interface{}
	// v2 is the whole Swagger 2.0 document.
	v2 *spec.Swagger
	// v3 holds one OpenAPI 3 document per group-version, by gvPath.
	v3 map[string]*spec3.OpenAPI
	// gvOrder lists v3's keys in the order of Config.Resources.
	gvOrder []string
	handler http.Handler

	// custom holds the custom resources' documents.
	custom customDocs
}

// New validates cfg, fills its defaults and builds the v2 document and the
// v3 document of every served group-version.
func New(cfg Config) (*OpenAPI, error) {
	if len(cfg.Resources) == 0 {
		return nil, ErrNoResources
	}
	if cfg.Definitions == nil {
		cfg.Definitions = builtinDefinitions
	}
	if cfg.Title == "" {
		cfg.Title = "Kubernetes"
	}
	if cfg.Version == "" {
		cfg.Version = "unversioned"
	}
	// The definitions' names do not depend on the ref form, so one call with
	// a throwaway callback is enough to validate model names.
	known := cfg.Definitions(func(string) spec.Ref { return spec.Ref{} })
	seen := map[schema.GroupVersionResource]bool{}
	resources := make([]Resource, 0, len(cfg.Resources))
	for _, r := range cfg.Resources {
		r = r.withDefaults()
		gvr := r.GroupVersionKind.GroupVersion().WithResource(r.Resource)
		switch {
		case r.GroupVersionKind.Kind == "" || r.GroupVersionKind.Version == "" || r.Resource == "":
			return nil, fmt.Errorf("openapi: resource %v: kind, version and resource are required", gvr)
		case seen[gvr]:
			return nil, fmt.Errorf("openapi: resource %v listed twice", gvr)
		}
		seen[gvr] = true
		for _, name := range r.modelNames() {
			if _, ok := known[name]; !ok {
				return nil, fmt.Errorf("openapi: resource %v: no definition named %q", gvr, name)
			}
		}
		resources = append(resources, r)
	}
	cfg.Resources = resources

	o := &OpenAPI{cfg: cfg, gvks: gvkExtensions(resources), v3: map[string]*spec3.OpenAPI{}}
	containers := routesFor(resources)
	if err := o.buildV2(containers); err != nil {
		return nil, err
	}
	for _, c := range containers {
		if err := o.buildV3(c); err != nil {
			return nil, err
		}
	}
	o.handler = newHandler(o)
	return o, nil
}

// V2 returns the Swagger 2.0 document. Callers must not modify it.
func (o *OpenAPI) V2() *spec.Swagger { return o.v2 }

// V3 returns the OpenAPI 3 document of one group-version, or false when the
// group-version is not served. Callers must not modify it.
func (o *OpenAPI) V3(gv schema.GroupVersion) (*spec3.OpenAPI, bool) {
	doc, ok := o.v3[gvPath(gv)]
	return doc, ok
}

// Handler serves /openapi/v2, /openapi/v3 and /openapi/v3/<gv path>; mount
// it on those paths (or on /openapi/ as a whole).
func (o *OpenAPI) Handler() http.Handler { return o.handler }

func (o *OpenAPI) buildV2(containers []*groupVersionRoutes) error {
	rc := make([]common.RouteContainer, len(containers))
	for i, c := range containers {
		rc[i] = c
	}
	sw, err := builder.BuildOpenAPISpecFromRoutes(rc, &common.Config{
		Info:              &spec.Info{InfoProps: spec.InfoProps{Title: o.cfg.Title, Version: o.cfg.Version}},
		GetDefinitions:    o.cfg.Definitions,
		GetDefinitionName: o.definitionName,
		CommonResponses:   map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
	})
	if err != nil {
		return fmt.Errorf("openapi: building v2 document: %w", err)
	}
	o.v2 = sw
	return nil
}

func (o *OpenAPI) v3Config() *common.OpenAPIV3Config {
	return &common.OpenAPIV3Config{
		Info:              &spec.Info{InfoProps: spec.InfoProps{Title: o.cfg.Title, Version: o.cfg.Version}},
		GetDefinitions:    o.cfg.Definitions,
		GetDefinitionName: o.definitionName,
		CommonResponses: map[int]*spec3.Response{http.StatusUnauthorized: {
			ResponseProps: spec3.ResponseProps{Description: "Unauthorized"},
		}},
	}
}

func (o *OpenAPI) buildV3(c *groupVersionRoutes) error {
	doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, o.v3Config())
	if err != nil {
		return fmt.Errorf("openapi: building v3 document of %v: %w", c.gv, err)
	}
	key := gvPath(c.gv)
	o.v3[key] = doc
	o.gvOrder = append(o.gvOrder, key)
	return nil
}

// definitionName is the kube-openapi naming hook: names are kept (they are
// already upstream's model names) and served kinds get their
// x-kubernetes-group-version-kind extension.
func (o *OpenAPI) definitionName(name string) (string, spec.Extensions) {
	if gvks, ok := o.gvks[name]; ok {
		return name, spec.Extensions{"x-kubernetes-group-version-kind": gvks}
	}
	return name, nil
}

// gvkExtensions maps model names to their x-kubernetes-group-version-kind
// list: every served kind and list kind, autoscaling/v1 Scale, the kinds of
// served subresources (Eviction, Binding, TokenRequest), and the meta
// types upstream tags (Status as v1; DeleteOptions and WatchEvent once per
// served group-version, as they are registered in every group).
func gvkExtensions(resources []Resource) map[string][]interface{} {
	out := map[string][]interface{}{}
	seen := map[string]map[schema.GroupVersionKind]bool{}
	add := func(name string, gvk schema.GroupVersionKind) {
		if seen[name] == nil {
			seen[name] = map[schema.GroupVersionKind]bool{}
		}
		if seen[name][gvk] {
			return
		}
		seen[name][gvk] = true
		out[name] = append(out[name], gvkExtensionValue(gvk))
	}
	core := schema.GroupVersion{Version: "v1"}
	add(modelStatus, core.WithKind("Status"))
	add(modelScale, scaleGVK)
	add(modelDeleteOptions, core.WithKind("DeleteOptions"))
	add(modelWatchEvent, core.WithKind("WatchEvent"))
	for _, r := range resources {
		gv := r.GroupVersionKind.GroupVersion()
		add(r.ModelName, r.GroupVersionKind)
		if r.ListModelName != "" {
			add(r.ListModelName, gv.WithKind(r.GroupVersionKind.Kind+"List"))
		}
		add(modelDeleteOptions, gv.WithKind("DeleteOptions"))
		add(modelWatchEvent, gv.WithKind("WatchEvent"))
		for _, name := range r.Subresources {
			if sub, ok := subresources[name]; ok {
				add(sub.model, sub.gvk)
			}
		}
	}
	return out
}
