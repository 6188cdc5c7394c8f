package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/cache"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// resourceHandler serves one resource: its object store for writes and its
// watch cache for reads, with the resource's registry strategy around both.
type resourceHandler struct {
	s       *Server
	res     *registry.Resource
	objects *objectStore
	cache   *cache.Cache
	hooks   resourceHooks
	// fields tracks managedFields: the server's for built-in kinds, the
	// CRD version's schema for custom resources.
	fields *fieldTracker
	// custom is set for a custom resource (crd_serve.go).
	custom *customState
	// storedProtobuf: protobuf lists pass the cache's stored bytes through
	// (see streamProtobufList).
	storedProtobuf bool
}

// resourceHooks are how a resource is deleted, when that is more than
// removing it, and the subresources it serves beyond status. Admission
// and allocation are not here: every write goes through the server's
// admission chain (package admission).
type resourceHooks struct {
	// gracePeriod returns the deletion grace period for obj (0: immediate).
	gracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) int64
	// keepOnDelete reports that obj must be marked, not removed, even
	// without metadata finalizers (a namespace with spec finalizers).
	keepOnDelete func(obj runtime.Object) bool
	// markedForDeletion adjusts an object being marked (namespace phase).
	markedForDeletion func(obj runtime.Object)
	// subresources beyond status and approval (binding, eviction, scale,
	// finalize).
	subresources map[string]subresourceHandler
	// serve, when set, answers every request to the resource itself: its
	// objects are computed when read, not stored (componentstatuses).
	serve subresourceHandler
}

// subresourceHandler serves verb on ns/name/<subresource>.
type subresourceHandler func(s *Server, w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo)

func (h *resourceHandler) serve(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) {
	ns := info.Namespace
	if !h.res.Namespaced {
		ns = ""
	}
	if info.Subresource != "" {
		if sub, ok := h.hooks.subresources[info.Subresource]; ok {
			sub(h.s, w, r, h, info)
			return
		}
		if _, ok := h.res.PartStrategy(info.Subresource); !ok {
			// Not "pods \"x\" not found": the object may well exist; it is
			// the path that has no handler, as upstream's mux answers.
			h.s.writeError(w, r, errNoRoute())
			return
		}
		// status and approval: the object, written through the
		// subresource's strategy.
		switch info.Verb {
		case "get":
			h.get(w, r, ns, info.Name)
		case "update":
			h.update(w, r, ns, info.Name, info.Subresource)
		case "patch":
			h.patch(w, r, ns, info.Name, info.Subresource)
		default:
			h.s.writeError(w, r, methodNotSupported(h, info.Verb))
		}
		return
	}
	if h.hooks.serve != nil {
		h.hooks.serve(h.s, w, r, h, info)
		return
	}
	switch info.Verb {
	case "get":
		h.get(w, r, ns, info.Name)
	case "list":
		h.list(w, r, ns)
	case "watch":
		h.watch(w, r, ns, info.Name)
	case "create":
		if info.Name != "" {
			h.s.writeError(w, r, methodNotSupported(h, "create"))
			return
		}
		if err := h.custom.refuseCreate(h); err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.create(w, r, ns)
	case "update":
		h.update(w, r, ns, info.Name, "")
	case "patch":
		h.patch(w, r, ns, info.Name, "")
	case "delete":
		h.delete(w, r, ns, info.Name)
	case "deletecollection":
		h.deleteCollection(w, r, ns)
	default:
		h.s.writeError(w, r, methodNotSupported(h, info.Verb))
	}
}

func methodNotSupported(h *resourceHandler, verb string) error {
	return apierrors.NewMethodNotSupported(h.objects.gr, verb)
}

// respond writes a single object in the negotiated shape.
func (h *resourceHandler) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	choice, ok := h.negotiate(r)
	if !ok {
		h.s.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", h.objects.gr, "", "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", 0, false))
		return
	}
	out, err := h.transform(choice, obj)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeObject(w, r, code, choice, out)
}

// subresourceBody checks the verb of a subresource request and decodes its
// body as gvk into into; on failure it has already answered the client.
func (s *Server) subresourceBody(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo, verb string, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, bool) {
	if info.Verb != verb {
		s.writeError(w, r, methodNotSupported(h, info.Verb))
		return nil, false
	}
	data, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	obj, err := s.decodeObject(w, r, data, gvk, into)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return obj, true
}
