package aggregator

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OpenAPI v3 is aggregated by reference, as upstream's openapiv3
// controller lists remote group versions: /openapi/v3 (the API server's
// document) gains an entry for each remote group version whose server
// publishes one, and /openapi/v3/apis/<group>/<version> of such a group
// version is proxied to that server like any request for it. The v2
// document, which upstream merges into one Swagger spec, stays the API
// server's own.

const openAPIV3Path = "/openapi/v3"

// openAPIV3Discovery is the /openapi/v3 document.
type openAPIV3Discovery struct {
	Paths map[string]openAPIV3Entry `json:"paths"`
}

type openAPIV3Entry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// gvPath is a group version's key in /openapi/v3.
func gvPath(gv schema.GroupVersion) string { return "apis/" + gv.Group + "/" + gv.Version }

// serveOpenAPIV3 answers /openapi/v3 and /openapi/v3/apis/<g>/<v> for
// remote group versions; ok is false for every other request.
func (a *Aggregator) serveOpenAPIV3(w http.ResponseWriter, r *http.Request, delegate http.Handler, t *routeTable) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, openAPIV3Path)
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	if rest == "" || rest == "/" {
		a.serveOpenAPIV3Discovery(w, r, delegate)
		return true
	}
	key := strings.TrimPrefix(rest, "/")
	group, version, ok := strings.Cut(strings.TrimPrefix(key, "apis/"), "/")
	if !ok || !strings.HasPrefix(key, "apis/") || strings.Contains(version, "/") {
		return false
	}
	remote, ok := t.remote[schema.GroupVersion{Group: group, Version: version}]
	if !ok {
		return false
	}
	a.proxy(w, r, remote)
	return true
}

func (a *Aggregator) serveOpenAPIV3Discovery(w http.ResponseWriter, r *http.Request, delegate http.Handler) {
	rec := &recorder{header: http.Header{}}
	local := r.Clone(r.Context())
	local.Method = http.MethodGet
	local.Header.Del("If-None-Match")
	delegate.ServeHTTP(rec, local)
	var doc openAPIV3Discovery
	if rec.status() != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &doc) != nil {
		copyResponse(w, rec)
		return
	}
	if doc.Paths == nil {
		doc.Paths = map[string]openAPIV3Entry{}
	}
	for _, gv := range a.discovery.withOpenAPIV3() {
		if _, ok := doc.Paths[gvPath(gv)]; !ok {
			doc.Paths[gvPath(gv)] = openAPIV3Entry{ServerRelativeURL: openAPIV3Path + "/" + gvPath(gv)}
		}
	}
	writeJSON(w, &doc)
}

// setOpenAPIV3 records whether gv's server publishes its OpenAPI v3.
func (c *discoveryCache) setOpenAPIV3(gv schema.GroupVersion, has bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.openAPIV3 == nil {
		c.openAPIV3 = map[schema.GroupVersion]bool{}
	}
	if has {
		c.openAPIV3[gv] = true
	} else {
		delete(c.openAPIV3, gv)
	}
}

func (c *discoveryCache) withOpenAPIV3() []schema.GroupVersion {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]schema.GroupVersion, 0, len(c.openAPIV3))
	for gv := range c.openAPIV3 {
		out = append(out, gv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
