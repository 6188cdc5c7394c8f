package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/myriad-k8s/myriad/internal/apiextensions"
	"github.com/myriad-k8s/myriad/internal/openapi"
	"github.com/myriad-k8s/myriad/internal/patch"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// This file serves custom resources: one resourceHandler per served
// version of every established CRD, built from the CRD with the same
// machinery as a built-in resource (object store, watch cache, strategy,
// field managers), over unstructured objects stored as JSON.

// customResources is the set of custom resource handlers. The request
// path reads handlers through an atomic pointer to an immutable map and
// takes no lock; a change builds a new map under mu (copy on write).
type customResources struct {
	handlers atomic.Pointer[map[schema.GroupVersionResource]*resourceHandler]
	mu       struct {
		sync.Mutex
		// crds are the served CRDs by name; guarded by mu.
		crds map[string]*crdServing
		// groupVersions are those custom resources are served in, and
		// added and removed what changed since the hook last heard.
		groupVersions, added, removed map[schema.GroupVersion]bool
	}
	// onGroupVersions is OnCustomGroupVersions' hook (set before Start).
	onGroupVersions func(ctx context.Context, added, removed []schema.GroupVersion)
}

// OnCustomGroupVersions sets fn to hear of the group versions custom
// resources start and stop being served in: the aggregator's Local
// APIServices for CRDs (upstream's crdRegistrationController). fn is
// called by the CRD controller, one call at a time, without the server's
// locks; a group version is added once however many CRDs serve it. Call
// it before Start.
func (s *Server) OnCustomGroupVersions(fn func(ctx context.Context, added, removed []schema.GroupVersion)) {
	s.custom.onGroupVersions = fn
}

// notifyGroupVersions passes the pending changes to the hook.
func (s *Server) notifyGroupVersions(ctx context.Context) {
	s.custom.mu.Lock()
	var added, removed []schema.GroupVersion
	for gv := range s.custom.mu.added {
		added = append(added, gv)
	}
	for gv := range s.custom.mu.removed {
		removed = append(removed, gv)
	}
	s.custom.mu.added, s.custom.mu.removed = nil, nil
	s.custom.mu.Unlock()
	if s.custom.onGroupVersions == nil || len(added)+len(removed) == 0 {
		return
	}
	sortGVs(added)
	sortGVs(removed)
	s.custom.onGroupVersions(ctx, added, removed)
}

func sortGVs(gvs []schema.GroupVersion) {
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
}

// crdServing is what one CRD serves.
type crdServing struct {
	uid types.UID
	// generation and names are what the handlers were built from: a CRD
	// event that changes neither (a status write) rebuilds nothing.
	generation int64
	names      apiextensionsv1.CustomResourceDefinitionNames
	// openAPIV2 and openAPIV3 are the CRD's documents (openapi.SetCustom).
	openAPIV2 *spec.Swagger
	openAPIV3 []openapi.CustomGroupVersion
	// versions by version name.
	versions map[string]*servedVersion
	// terminating: the CRD is being deleted, creates are refused.
	terminating *atomic.Bool
}

// servedVersion is one served version's handler and what decides whether
// a CRD update can keep its cache (identity) or needs a new one.
type servedVersion struct {
	h        *resourceHandler
	identity string
	codec    *crCodec
}

// customState is what a custom resource's handler has beyond a built-in's.
type customState struct {
	// terminating is shared by the handlers of one CRD.
	terminating *atomic.Bool
	// schema is the served version's.
	schema *apiextensions.Schema
	// deprecation is the Warning every request to a deprecated version
	// carries; "" when the version is not deprecated.
	deprecation string
}

// refuseCreate is upstream's answer to a create while the CRD is
// terminating; nil for built-in resources (c nil).
func (c *customState) refuseCreate(h *resourceHandler) error {
	if c == nil || !c.terminating.Load() {
		return nil
	}
	err := methodNotSupported(h, "create").(*apierrors.StatusError)
	err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
	return err
}

// load returns the current handlers (never nil).
func (c *customResources) load() map[schema.GroupVersionResource]*resourceHandler {
	if m := c.handlers.Load(); m != nil {
		return *m
	}
	return nil
}

// handler finds the handler of gvr, built-in or custom.
func (s *Server) handler(gvr schema.GroupVersionResource) (*resourceHandler, bool) {
	if h, ok := s.handlers[gvr]; ok {
		return h, true
	}
	h, ok := s.custom.load()[gvr]
	return h, ok
}

// decodeBody decodes a create or update body as h's kind. For a custom
// resource it also finds the fields the schema does not know, which the
// strategy prunes: an error with fieldValidation=Strict, a warning with
// Warn (the default), nothing with Ignore, as upstream.
func (h *resourceHandler) decodeBody(w http.ResponseWriter, r *http.Request, data []byte) (runtime.Object, error) {
	obj, err := h.s.decodeObject(w, r, data, h.res.GroupVersionKind(), h.res.New())
	if err != nil || h.custom == nil {
		return obj, err
	}
	warnings, err := h.custom.unknownFields(r, obj)
	addWarnings(w, warnings)
	return obj, err
}

// unknownFields prunes obj (a custom resource) and reports what went, per
// the request's fieldValidation.
func (c *customState) unknownFields(r *http.Request, obj runtime.Object) ([]string, error) {
	validation, err := fieldValidation(r)
	if err != nil || validation == "Ignore" {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	pruned := c.schema.Prune(u.Object)
	if len(pruned) == 0 {
		return nil, nil
	}
	msgs := make([]string, len(pruned))
	for i, p := range pruned {
		msgs[i] = fmt.Sprintf("unknown field %q", p)
	}
	if validation == "Strict" {
		return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	}
	return msgs, nil
}

// negotiate is the response format for a request to h.
func (h *resourceHandler) negotiate(r *http.Request) (mediaChoice, bool) {
	return h.s.negotiateMedia(r, true, h.custom == nil)
}

// serveCRD serves (or, after an update, serves anew) every served version
// of crd, whose names must have been accepted. Versions whose storage
// layout did not change keep their caches.
func (s *Server) serveCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := s.checkServable(crd); err != nil {
		return err
	}
	s.custom.mu.Lock()
	defer s.custom.mu.Unlock()
	if s.custom.mu.crds == nil {
		s.custom.mu.crds = map[string]*crdServing{}
	}
	cur := s.custom.mu.crds[crd.Name]
	if cur != nil && cur.uid != crd.UID {
		s.dropCRDLocked(crd.Name)
		cur = nil
	}
	if cur != nil && cur.generation == crd.Generation && reflect.DeepEqual(cur.names, crd.Status.AcceptedNames) {
		return nil
	}
	next := &crdServing{uid: crd.UID, generation: crd.Generation, names: *crd.Status.AcceptedNames.DeepCopy(),
		versions: map[string]*servedVersion{}, terminating: &atomic.Bool{}}
	if cur != nil {
		next.terminating = cur.terminating
	}
	conv, err := apiextensions.NewConverter(crd, apiextensions.ConverterOptions{ResolveService: s.resolveService})
	if err != nil {
		return fmt.Errorf("converter of %s: %w", crd.Name, err)
	}
	storageGV := schema.GroupVersion{Group: crd.Spec.Group, Version: storageVersion(crd)}
	var errs []string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		res, sch, err := registry.CustomResource(crd, v.Name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		state := &crCodecState{served: res.GroupVersion, storage: storageGV, conv: conv, schema: sch}
		fields, err := newCRFieldTracker(res, sch, conv, s.log.Warn)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		custom := &customState{terminating: next.terminating, schema: sch, deprecation: apiextensions.DeprecationWarning(crd, v.Name)}
		id := crdIdentity(crd, v, storageGV)
		var old *servedVersion
		if cur != nil {
			old = cur.versions[v.Name]
		}
		sv := &servedVersion{identity: id}
		if old != nil && old.identity == id {
			// Same keys, scope, kind and indexes: keep the cache, swap
			// what the CRD's schema decides, from the next write on.
			old.codec.state.Store(state)
			sv.codec = old.codec
			sv.h = &resourceHandler{s: s, res: res, objects: old.h.objects, cache: old.h.cache,
				storedProtobuf: old.h.storedProtobuf, fields: fields, custom: custom}
		} else {
			if old != nil {
				old.h.cache.Stop()
			}
			sv.codec = &crCodec{}
			sv.codec.state.Store(state)
			h, err := s.newCustomHandler(res, sv.codec, selectableFieldPaths(v), fields, custom)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			sv.h = h
		}
		if res.HasSubresource("scale") {
			sv.h.hooks.subresources = map[string]subresourceHandler{"scale": (*Server).serveScale}
		}
		next.versions[v.Name] = sv
	}
	if cur != nil {
		// Versions no longer served (replaced ones were stopped above).
		for name, old := range cur.versions {
			if _, ok := next.versions[name]; !ok {
				old.h.cache.Stop()
			}
		}
	}
	if len(errs) > 0 {
		next.generation = -1 // build again on the next event or retry
	}
	next.openAPIV2, next.openAPIV3 = s.crdOpenAPI(crd, next)
	s.custom.mu.crds[crd.Name] = next
	s.publishCustomLocked()
	if len(errs) > 0 {
		return fmt.Errorf("serving %s: %s", crd.Name, strings.Join(errs, "; "))
	}
	return nil
}

// checkServable refuses what the server cannot serve whatever the CRD
// validation said: no names, no single storage version, or a resource a
// built-in already is (built-ins win, as upstream's mux routes them
// first).
func (s *Server) checkServable(crd *apiextensionsv1.CustomResourceDefinition) error {
	n := crd.Status.AcceptedNames
	if crd.Spec.Group == "" || n.Plural == "" || n.Kind == "" {
		return fmt.Errorf("custom resource definition %s: group, plural and kind are required to serve it", crd.Name)
	}
	storage := 0
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage++
		}
		if _, builtin := s.handlers[schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: n.Plural}]; builtin && v.Served {
			return fmt.Errorf("custom resource definition %s: %s/%s %s is a built-in resource", crd.Name, crd.Spec.Group, v.Name, n.Plural)
		}
	}
	if storage != 1 {
		return fmt.Errorf("custom resource definition %s: %d storage versions, want exactly one", crd.Name, storage)
	}
	return nil
}

// newCustomHandler builds and starts the handler of a newly served custom
// resource version.
func (s *Server) newCustomHandler(res *registry.Resource, codec *crCodec, indexedFields []string, fields *fieldTracker, state *customState) (*resourceHandler, error) {
	gr := res.GroupVersionResource().GroupResource()
	st := s.cfg.Encryption.Wrap(gr, s.storeForResource(gr))
	h := &resourceHandler{s: s, res: res, fields: fields, custom: state,
		objects: newObjectStore(res, st, codec, s.serverMetrics, nil)}
	// Every served version has its own cache over the one prefix; its
	// metrics name carries the version so they do not collide.
	metricsName := schema.GroupResource{Group: res.GroupVersion.String(), Resource: res.Resource}
	if err := s.attachCache(h, st, metricsName, indexedFields, ""); err != nil {
		return nil, err
	}
	if err := h.cache.Start(context.Background()); err != nil {
		h.cache.Stop()
		return nil, fmt.Errorf("starting cache for %s: %w", res.GroupVersionResource(), err)
	}
	return h, nil
}

// dropCRD stops serving the named CRD.
func (s *Server) dropCRD(name string) {
	s.custom.mu.Lock()
	defer s.custom.mu.Unlock()
	if s.dropCRDLocked(name) {
		s.publishCustomLocked()
	}
}

func (s *Server) dropCRDLocked(name string) bool {
	cur, ok := s.custom.mu.crds[name]
	if !ok {
		return false
	}
	delete(s.custom.mu.crds, name)
	for _, v := range cur.versions {
		v.h.cache.Stop()
	}
	return true
}

// servedCRD returns the handlers of the named CRD by version.
func (s *Server) servedCRD(name string) (*crdServing, bool) {
	s.custom.mu.Lock()
	defer s.custom.mu.Unlock()
	c, ok := s.custom.mu.crds[name]
	return c, ok
}

// stopCustomResources stops every custom resource cache (Server.Stop).
func (s *Server) stopCustomResources() {
	s.custom.mu.Lock()
	defer s.custom.mu.Unlock()
	for name := range s.custom.mu.crds {
		s.dropCRDLocked(name)
	}
	s.custom.handlers.Store(nil)
}

// publishCustomLocked makes the current CRDs' handlers the ones requests
// see, and rebuilds discovery with them.
func (s *Server) publishCustomLocked() {
	m := map[schema.GroupVersionResource]*resourceHandler{}
	var custom []*registry.Resource
	for _, c := range s.custom.mu.crds {
		for _, v := range c.versions {
			m[v.h.res.GroupVersionResource()] = v.h
			custom = append(custom, v.h.res)
		}
	}
	// Upstream's order: groups by name, versions by Kubernetes version
	// priority (the preferred first), resources by name.
	sort.Slice(custom, func(i, j int) bool {
		a, b := custom[i].GroupVersion, custom[j].GroupVersion
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
		}
		return custom[i].Resource < custom[j].Resource
	})
	// New routes open before discovery and OpenAPI change, and routes go
	// away only after: a client that saw a version in discovery can use
	// it, and one that saw a route go away (or waits for Established, set
	// after this) finds discovery agreeing.
	union := make(map[schema.GroupVersionResource]*resourceHandler, len(m))
	for gvr, h := range s.custom.load() {
		union[gvr] = h
	}
	for gvr, h := range m {
		union[gvr] = h
	}
	s.custom.handlers.Store(&union)
	d, err := newDiscovery(append(s.cfg.Registry.Resources(), custom...))
	if err != nil {
		s.log.Error("rebuilding discovery", "err", err)
	} else {
		s.discovery.Store(d)
	}
	var v2 []*spec.Swagger
	var v3 []openapi.CustomGroupVersion
	names := make([]string, 0, len(s.custom.mu.crds))
	for name := range s.custom.mu.crds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := s.custom.mu.crds[name]
		if c.openAPIV2 != nil {
			v2 = append(v2, c.openAPIV2)
		}
		v3 = append(v3, c.openAPIV3...)
	}
	s.openapi.SetCustom(v2, v3)
	s.custom.handlers.Store(&m)
	s.recordGroupVersionsLocked(m)
}

// recordGroupVersionsLocked notes which group versions m serves that the
// previous handlers did not, and the other way round, for the hook.
func (s *Server) recordGroupVersionsLocked(m map[schema.GroupVersionResource]*resourceHandler) {
	now := map[schema.GroupVersion]bool{}
	for gvr := range m {
		now[gvr.GroupVersion()] = true
	}
	c := &s.custom.mu
	if c.added == nil {
		c.added, c.removed = map[schema.GroupVersion]bool{}, map[schema.GroupVersion]bool{}
	}
	for gv := range now {
		if !c.groupVersions[gv] {
			if c.removed[gv] {
				delete(c.removed, gv)
			} else {
				c.added[gv] = true
			}
		}
	}
	for gv := range c.groupVersions {
		if !now[gv] {
			if c.added[gv] {
				delete(c.added, gv)
			} else {
				c.removed[gv] = true
			}
		}
	}
	c.groupVersions = now
}

// crdOpenAPI builds crd's documents once per change of the CRD. A version
// whose document cannot be built is served without one.
func (s *Server) crdOpenAPI(crd *apiextensionsv1.CustomResourceDefinition, served *crdServing) (*spec.Swagger, []openapi.CustomGroupVersion) {
	v2, err := apiextensions.OpenAPIV2(crd)
	if err != nil {
		s.log.Debug("no OpenAPI v2 document for a CRD", "crd", crd.Name, "err", err)
		v2 = nil
	}
	var v3 []openapi.CustomGroupVersion
	for _, v := range crd.Spec.Versions {
		if _, ok := served.versions[v.Name]; !ok {
			continue
		}
		doc, err := apiextensions.OpenAPIV3(crd, v.Name)
		if err != nil {
			s.log.Debug("no OpenAPI v3 document for a CRD version", "crd", crd.Name, "version", v.Name, "err", err)
			doc = nil
		}
		v3 = append(v3, openapi.CustomGroupVersion{GroupVersion: schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}, Doc: doc})
	}
	return v2, v3
}

// storageVersion is the CRD's storage version's name.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

// crdIdentity is what a served version's cache depends on: while it holds,
// a CRD update swaps schema, columns and converter under the same cache.
func crdIdentity(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, storage schema.GroupVersion) string {
	n := crd.Status.AcceptedNames
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%v|%v", crd.UID, crd.Spec.Scope, n.Plural, n.Singular, n.Kind, n.ListKind, storage,
		selectableFieldPaths(v), v.Subresources != nil && v.Subresources.Status != nil)
}

// selectableFieldPaths are the version's selectable fields as field
// selector keys (".spec.color" → "spec.color"), which the cache indexes.
func selectableFieldPaths(v apiextensionsv1.CustomResourceDefinitionVersion) []string {
	out := []string{}
	for _, f := range v.SelectableFields {
		out = append(out, strings.TrimPrefix(f.JSONPath, "."))
	}
	return out
}

// crCodec stores custom resources as JSON in the storage version, and
// reads them into the served version with the schema's defaults applied
// (upstream defaults on read). Its state changes when the CRD does.
type crCodec struct {
	state atomic.Pointer[crCodecState]
}

type crCodecState struct {
	served, storage schema.GroupVersion
	conv            *apiextensions.Converter
	schema          *apiextensions.Schema
}

var _ runtime.Serializer = (*crCodec)(nil)

// conversionTimeout bounds one conversion of a stored object (a webhook
// call); upstream's webhook converter uses 30 s.
const conversionTimeout = 30 * time.Second

func (c *crCodec) Encode(obj runtime.Object, w io.Writer) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("custom resource codec: %T is not unstructured", obj)
	}
	st := c.state.Load()
	if st.storage != st.served {
		ctx, cancel := context.WithTimeout(context.Background(), conversionTimeout)
		defer cancel()
		out, err := st.conv.Convert(ctx, []*unstructured.Unstructured{u.DeepCopy()}, st.storage)
		if err != nil {
			return fmt.Errorf("converting to the storage version %s: %w", st.storage, err)
		}
		u = out[0]
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (c *crCodec) Decode(data []byte, _ *schema.GroupVersionKind, _ runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, nil, err
	}
	st := c.state.Load()
	if u.GroupVersionKind().GroupVersion() != st.served {
		ctx, cancel := context.WithTimeout(context.Background(), conversionTimeout)
		defer cancel()
		out, err := st.conv.Convert(ctx, []*unstructured.Unstructured{u}, st.served)
		if err != nil {
			return nil, nil, fmt.Errorf("converting to %s: %w", st.served, err)
		}
		u = out[0]
	}
	st.schema.Default(u.Object)
	gvk := u.GroupVersionKind()
	return u, &gvk, nil
}

func (c *crCodec) Identifier() runtime.Identifier { return "myriad-custom-resource-json" }

// newCRFieldTracker tracks managedFields of one custom resource version
// with its schema's types, as upstream's CRD handler does.
func newCRFieldTracker(res *registry.Resource, sch *apiextensions.Schema, conv *apiextensions.Converter, log func(string, ...any)) (*fieldTracker, error) {
	hasStatus := res.Status != nil
	fm, err := patch.NewFieldManagers(patch.FieldManagersConfig{
		TypeConverter:   sch.TypeConverter(),
		CustomResources: true,
		Creater:         unstructuredCreater{},
		Convertor:       conv.ObjectConvertor(),
		ResetFields: func(_ schema.GroupVersionKind, subresource string) *fieldpath.Set {
			if !hasStatus {
				return nil
			}
			if subresource == "status" {
				return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
			}
			return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("field managers of %s: %w", res.GroupVersionResource(), err)
	}
	return &fieldTracker{managers: fm, log: log}, nil
}

// unstructuredCreater makes empty custom resources for the field managers.
type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
