package request

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
)

// Verbs a resource request can carry (RequestInfo.Verb). Non-resource
// requests carry the lower-cased HTTP method instead ("get", "post", ...).
const (
	VerbGet              = "get"
	VerbList             = "list"
	VerbWatch            = "watch"
	VerbCreate           = "create"
	VerbUpdate           = "update"
	VerbPatch            = "patch"
	VerbDelete           = "delete"
	VerbDeleteCollection = "deletecollection"
	VerbProxy            = "proxy"
)

// ErrInvalidPath is returned by Parse for paths that contain "." or ".."
// segments, or empty segments inside an API path. Callers answer 400.
var ErrInvalidPath = errors.New("invalid request path")

// RequestInfo is what the URL and method of a request address. Its fields are
// filled exactly as upstream's RequestInfoFactory fills them, so RBAC rules,
// audit policies and metrics dashboards written for upstream apply unchanged.
type RequestInfo struct {
	// IsResourceRequest is false for discovery and other non-resource paths
	// (/api, /apis/apps, /healthz, /openapi/v2, ...).
	IsResourceRequest bool
	// Path is the URL path as received.
	Path string
	// Verb is one of the Verb* constants for resource requests (list and
	// watch are told apart from get by the absence of a name and by
	// ?watch=true), or the lower-cased HTTP method otherwise.
	Verb string

	APIPrefix  string // "api" or "apis"
	APIGroup   string // "" for the legacy core group
	APIVersion string
	// Namespace is the namespace addressed. For the namespace object itself
	// (/api/v1/namespaces/ns) it is that namespace's name, as upstream.
	Namespace   string
	Resource    string
	Subresource string
	// Name is the object name; for list and watch it is taken from a
	// fieldSelector of the form metadata.name=X, as upstream, so a
	// single-object watch can be authorized like a get of that object.
	Name string
	// FieldSelector is a list's or watch's fieldSelector as sent, unparsed
	// (the Node authorizer reads spec.nodeName from it, as upstream's
	// Attributes.GetFieldSelector).
	FieldSelector string
	// Parts are the path segments from the resource on:
	// resource[/name[/subresource[/...]]].
	Parts []string
}

// isSpecialVerb: these may appear right after the version, before the
// namespace: /api/v1/watch/namespaces/ns/pods (legacy watch), /api/v1/proxy/...
func isSpecialVerb(s string) bool { return s == VerbProxy || s == VerbWatch }

// isNamespaceSubresource: subresources of the namespace object itself, e.g.
// /api/v1/namespaces/ns/status, not resources inside the namespace.
func isNamespaceSubresource(s string) bool { return s == "status" || s == "finalize" }

// Parse extracts the RequestInfo from r. It never fails for well-formed
// paths: anything that does not look like /api/VERSION/... or
// /apis/GROUP/VERSION/... is returned as a non-resource request.
func Parse(r *http.Request) (*RequestInfo, error) {
	urlPath := r.URL.Path
	info := &RequestInfo{
		Path: urlPath,
		Verb: strings.ToLower(r.Method),
	}

	parts := splitPath(urlPath)
	for i, p := range parts {
		// An empty segment can only be an interior "//" since splitPath
		// trims the ends. Inside an API path it would shift every later
		// field ("namespaces//pods" reads as a cluster-wide pods list).
		if p == "." || p == ".." || (p == "" && isAPIPrefix(parts[0]) && i > 0) {
			return nil, fmt.Errorf("%w: %q", ErrInvalidPath, urlPath)
		}
	}
	if len(parts) < 3 || !isAPIPrefix(parts[0]) {
		return info, nil
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]

	if info.APIPrefix == "apis" {
		// The prefix is consumed; a resource request still needs
		// group/version/resource.
		if len(parts) < 3 {
			return info, nil
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}

	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	if isSpecialVerb(parts[0]) {
		if len(parts) < 2 {
			return nil, fmt.Errorf("%w: %q: no resource after %q", ErrInvalidPath, urlPath, parts[0])
		}
		info.Verb = parts[0]
		parts = parts[1:]
	} else {
		info.Verb = verbForMethod(r.Method)
	}

	// /namespaces/{namespace}/{resource}/... becomes relative to the
	// resource; /namespaces/{namespace}[/status|/finalize] stays the
	// namespace object.
	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !isNamespaceSubresource(parts[2]) {
			parts = parts[2:]
		}
	}
	info.Parts = parts

	if len(parts) >= 3 && info.Verb != VerbProxy {
		info.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	info.Resource = parts[0]

	// A GET without a name is a collection read: list, or watch when asked.
	if info.Name == "" && info.Verb == VerbGet && r.URL.RawQuery != "" {
		q := r.URL.Query() // parsed once: this runs on every collection read
		info.Verb = VerbList
		if queryBool(q["watch"]) {
			info.Verb = VerbWatch
		}
		// A list or watch limited to one name by field selector is
		// authorized (and counted) as addressing that object, as upstream
		// (which does this for GET only, not the legacy /watch/ paths).
		info.FieldSelector = q.Get("fieldSelector")
		if fs := info.FieldSelector; strings.Contains(fs, "metadata.name") {
			if sel, err := fields.ParseSelector(fs); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(path.IsValidPathSegmentName(name)) == 0 {
					info.Name = name
				}
			}
		}
	} else if info.Name == "" && info.Verb == VerbGet {
		info.Verb = VerbList
	}
	if info.Name == "" && info.Verb == VerbDelete {
		info.Verb = VerbDeleteCollection
	}
	return info, nil
}

func isAPIPrefix(s string) bool { return s == "api" || s == "apis" }

func verbForMethod(method string) string {
	switch method {
	case http.MethodPost:
		return VerbCreate
	case http.MethodGet, http.MethodHead:
		return VerbGet
	case http.MethodPut:
		return VerbUpdate
	case http.MethodPatch:
		return VerbPatch
	case http.MethodDelete:
		return VerbDelete
	}
	return ""
}

// queryBool mirrors apimachinery's query conversion for booleans: absent,
// "0" and "false" (any case) are false; anything else, even "", is true.
func queryBool(values []string) bool {
	if len(values) == 0 {
		return false
	}
	return values[0] != "0" && !strings.EqualFold(values[0], "false")
}

// splitPath trims leading and trailing slashes (so /api/v1/pods/ is the
// pods collection, as upstream) and splits on the rest.
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
