package openapi

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
)

// This file describes the REST paths of the served resources as kube-openapi
// routes (common.RouteContainer), so builder and builder3 produce paths,
// operations and parameters as they do for upstream's go-restful services.
// Paths matter beyond documentation: kubectl decides whether the server
// supports server-side field validation by finding, in the v3 document, a
// PATCH operation tagged with the kind's x-kubernetes-group-version-kind and
// a fieldValidation query parameter.

// Upstream definition names used by the routes.
const (
	modelStatus        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	modelDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	modelPatch         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	modelWatchEvent    = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
	modelScale         = "io.k8s.api.autoscaling.v1.Scale"
)

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// subresource describes the body and operations of a subresource with its
// own kind. "status" is not listed: it has the object's kind and the item's
// get, update and patch.
type subresource struct {
	model string
	gvk   schema.GroupVersionKind
	// verbs among "get", "update", "patch", "create".
	verbs []string
}

var subresources = map[string]subresource{
	"scale":    {modelScale, scaleGVK, []string{"get", "update", "patch"}},
	"eviction": {"io.k8s.api.policy.v1.Eviction", schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, []string{"create"}},
	"binding":  {"io.k8s.api.core.v1.Binding", schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, []string{"create"}},
	"token":    {"io.k8s.api.authentication.v1.TokenRequest", schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, []string{"create"}},
}

// Content types as upstream lists them on operations.
var (
	produces      = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/cbor"}
	producesWatch = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch", "application/cbor", "application/cbor-seq"}
	consumesAny   = []string{"*/*"}
	consumesPatch = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/apply-patch+cbor"}
)

// modelName is a request or response sample: kube-openapi names samples with
// util.GetCanonicalTypeName, which honours OpenAPIModelName, so a plain
// definition name stands in for a Go value of the type.
type modelName string

func (m modelName) OpenAPIModelName() string { return string(m) }

// groupVersionRoutes is the RouteContainer of one group-version.
type groupVersionRoutes struct {
	gv     schema.GroupVersion
	routes []common.Route
}

var _ common.RouteContainer = (*groupVersionRoutes)(nil)

func (g *groupVersionRoutes) RootPath() string                   { return "/" + gvPath(g.gv) }
func (g *groupVersionRoutes) PathParameters() []common.Parameter { return nil }
func (g *groupVersionRoutes) Routes() []common.Route             { return g.routes }

// route implements common.Route with plain fields.
type route struct {
	method, path, operation, description string
	params                               []common.Parameter
	consumes, produces                   []string
	metadata                             map[string]interface{}
	request                              interface{}
	responses                            []common.StatusCodeResponse
}

var _ common.Route = (*route)(nil)

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.operation }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.description }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.metadata }
func (r *route) RequestPayloadSample() interface{}                { return r.request }
func (r *route) ResponsePayloadSample() interface{}               { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

type response struct {
	code    int
	message string
	model   interface{}
}

func (r response) Code() int          { return r.code }
func (r response) Message() string    { return r.message }
func (r response) Model() interface{} { return r.model }

type param struct {
	name, description, dataType string
	kind                        common.ParameterKind
	required                    bool
}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.description }
func (p param) Required() bool             { return p.required }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return p.dataType }
func (p param) AllowMultiple() bool        { return false }

func query(name, dataType, description string) common.Parameter {
	return param{name: name, dataType: dataType, description: description, kind: common.QueryParameterKind}
}

func pathParam(name, description string) common.Parameter {
	return param{name: name, dataType: "string", description: description, kind: common.PathParameterKind, required: true}
}

var (
	paramNamespace = pathParam("namespace", "object name and auth scope, such as for teams and projects")
	paramPretty    = query("pretty", "string", "If 'true', then the output is pretty printed.")
	paramDryRun    = query("dryRun", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed")
	paramManager   = query("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes.")
	paramFieldVal  = query("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict")
	paramForce     = query("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people.")
	paramBody      = param{name: "body", dataType: "object", kind: common.BodyParameterKind, required: true}
	listParams     = []common.Parameter{
		query("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."),
		query("continue", "string", "The continue option should be set when retrieving more results from the server."),
		query("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
		query("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
		query("limit", "integer", "limit is a maximum number of responses to return for a list call."),
		query("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."),
		query("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
		query("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."),
		query("timeoutSeconds", "integer", "Timeout for the list/watch call."),
		query("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."),
	}
)

// routesFor returns the routes of every served resource, one container per
// group-version, in the order the group-versions first appear.
func routesFor(resources []Resource) []*groupVersionRoutes {
	var out []*groupVersionRoutes
	byGV := map[schema.GroupVersion]*groupVersionRoutes{}
	for _, r := range resources {
		gv := r.GroupVersionKind.GroupVersion()
		c, ok := byGV[gv]
		if !ok {
			c = &groupVersionRoutes{gv: gv}
			byGV[gv] = c
			out = append(out, c)
		}
		c.routes = append(c.routes, resourceRoutes(r)...)
	}
	return out
}

// resourceRoutes lists the operations of one resource, named as upstream
// names them (listCoreV1NamespacedPod, patchAppsV1NamespacedDeploymentScale).
func resourceRoutes(r Resource) []common.Route {
	gvk := r.GroupVersionKind
	root := "/" + gvPath(gvk.GroupVersion())
	scope, collection := "", root+"/"+r.Resource
	var scopeParams []common.Parameter
	if r.Namespaced {
		scope = "Namespaced"
		collection = root + "/namespaces/{namespace}/" + r.Resource
		scopeParams = []common.Parameter{paramNamespace}
	}
	item := collection + "/{name}"
	nameParam := pathParam("name", "name of the "+gvk.Kind)
	opPrefix := operationPrefix(gvk.GroupVersion())
	obj, list := modelName(r.ModelName), modelName(r.ListModelName)

	mk := func(method, path, verb, action, op string, gvkOf schema.GroupVersionKind, params []common.Parameter) *route {
		rt := &route{
			method:    method,
			path:      path,
			operation: verb + opPrefix + op,
			produces:  produces,
			consumes:  consumesAny,
			metadata: map[string]interface{}{
				"x-kubernetes-action":             action,
				"x-kubernetes-group-version-kind": gvkExtensionValue(gvkOf),
			},
		}
		rt.params = append(append(append([]common.Parameter{}, scopeParams...), params...), paramPretty)
		return rt
	}
	writeParams := []common.Parameter{paramDryRun, paramManager, paramFieldVal}
	ok := func(model interface{}) []common.StatusCodeResponse {
		return []common.StatusCodeResponse{response{http.StatusOK, "OK", model}}
	}
	var routes []common.Route
	add := func(rt *route, responses []common.StatusCodeResponse, body interface{}) {
		rt.responses = responses
		if body != nil {
			rt.request = body
			rt.params = append(rt.params, paramBody)
		}
		routes = append(routes, rt)
	}

	if r.hasVerb("list") {
		rt := mk(http.MethodGet, collection, "list", "list", scope+gvk.Kind, gvk, listParams)
		rt.produces = producesWatch
		add(rt, ok(list), nil)
		if r.Namespaced {
			all := mk(http.MethodGet, root+"/"+r.Resource, "list", "list", gvk.Kind+"ForAllNamespaces", gvk, listParams)
			all.params = append(append([]common.Parameter{}, listParams...), paramPretty)
			all.produces = producesWatch
			add(all, ok(list), nil)
		}
	}
	if r.hasVerb("create") {
		rt := mk(http.MethodPost, collection, "create", "post", scope+gvk.Kind, gvk, writeParams)
		add(rt, []common.StatusCodeResponse{response{http.StatusOK, "OK", obj}, response{http.StatusCreated, "Created", obj}, response{http.StatusAccepted, "Accepted", obj}}, obj)
	}
	if r.hasVerb("deletecollection") {
		rt := mk(http.MethodDelete, collection, "delete", "deletecollection", "Collection"+scope+gvk.Kind, gvk, append(append([]common.Parameter{}, listParams...), paramDryRun))
		add(rt, ok(modelName(modelStatus)), modelName(modelDeleteOptions))
	}
	itemRoutes := func(path, suffix string, model modelName, gvkOf schema.GroupVersionKind, verbs []string) {
		p := []common.Parameter{nameParam}
		has := func(v string) bool { return r.hasVerb(v) && contains(verbs, v) }
		if has("get") {
			add(mk(http.MethodGet, path, "read", "get", scope+gvk.Kind+suffix, gvkOf, p), ok(model), nil)
		}
		if has("update") {
			add(mk(http.MethodPut, path, "replace", "put", scope+gvk.Kind+suffix, gvkOf, append(p, writeParams...)),
				[]common.StatusCodeResponse{response{http.StatusOK, "OK", model}, response{http.StatusCreated, "Created", model}}, model)
		}
		if has("patch") {
			rt := mk(http.MethodPatch, path, "patch", "patch", scope+gvk.Kind+suffix, gvkOf, append(append(p, writeParams...), paramForce))
			rt.consumes = consumesPatch
			add(rt, []common.StatusCodeResponse{response{http.StatusOK, "OK", model}, response{http.StatusCreated, "Created", model}}, modelName(modelPatch))
		}
		// Subresources created by POST (eviction, binding, token) are
		// gated by the parent's create verb, which they do not need: any
		// served subresource is listed.
		if contains(verbs, "create") {
			add(mk(http.MethodPost, path, "create", "post", scope+gvk.Kind+suffix, gvkOf, append(p, writeParams...)),
				[]common.StatusCodeResponse{response{http.StatusOK, "OK", model}, response{http.StatusCreated, "Created", model}, response{http.StatusAccepted, "Accepted", model}}, model)
		}
	}
	itemRoutes(item, "", obj, gvk, []string{"get", "update", "patch"})
	if r.hasVerb("delete") {
		rt := mk(http.MethodDelete, item, "delete", "delete", scope+gvk.Kind, gvk, []common.Parameter{nameParam, paramDryRun,
			query("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted."),
			query("propagationPolicy", "string", "Whether and how garbage collection will be performed.")})
		add(rt, []common.StatusCodeResponse{response{http.StatusOK, "OK", modelName(modelStatus)}, response{http.StatusAccepted, "Accepted", modelName(modelStatus)}}, modelName(modelDeleteOptions))
	}
	for _, name := range r.Subresources {
		path, suffix := item+"/"+name, strings.ToUpper(name[:1])+name[1:]
		if name == "status" || name == "ephemeralcontainers" || name == "resize" {
			// Parts of the object, read and written as the whole object.
			itemRoutes(path, suffix, obj, gvk, []string{"get", "update", "patch"})
		} else if sub, ok := subresources[name]; ok {
			itemRoutes(path, suffix, modelName(sub.model), sub.gvk, sub.verbs)
		}
	}
	return routes
}

// operationPrefix is upstream's operation-ID infix of a group-version:
// CoreV1, AppsV1, RbacAuthorizationV1, CoordinationV1.
func operationPrefix(gv schema.GroupVersion) string {
	group := gv.Group
	if group == "" {
		group = "core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + strings.ToUpper(gv.Version[:1]) + gv.Version[1:]
}

// gvkExtensionValue is the value of one x-kubernetes-group-version-kind
// entry, in the in-memory shape the managedfields type converter parses.
func gvkExtensionValue(gvk schema.GroupVersionKind) map[string]interface{} {
	return map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
