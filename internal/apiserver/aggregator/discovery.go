package aggregator

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// discoveryCache holds each remote group version's resources, as its
// server last answered them, and the merged /apis document built from
// them and the local one.
type discoveryCache struct {
	mu sync.Mutex
	// byGV is the last successful answer per remote group version; stale
	// marks one whose latest check failed (upstream's Freshness: Stale).
	byGV  map[schema.GroupVersion]remoteDiscovery
	stale map[schema.GroupVersion]bool
	// merged is the aggregated document last built, valid while the
	// local document's ETag is localETag and nothing remote changed.
	merged    []byte
	etag      string
	localETag string
	localBody []byte
	// openAPIV3 holds the remote group versions whose servers publish
	// an OpenAPI v3 document for them (openapi.go).
	openAPIV3 map[schema.GroupVersion]bool
}

type remoteDiscovery struct {
	resources []apidiscoveryv2.APIResourceDiscovery
}

// set records gv's resources after a successful check (nil list: failed).
func (c *discoveryCache) set(gv schema.GroupVersion, list *metav1.APIResourceList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byGV == nil {
		c.byGV, c.stale = map[schema.GroupVersion]remoteDiscovery{}, map[schema.GroupVersion]bool{}
	}
	if list == nil {
		if _, ok := c.byGV[gv]; ok && !c.stale[gv] {
			c.stale[gv] = true
			c.merged = nil
		}
		return
	}
	d := remoteDiscovery{resources: toDiscoveryV2(gv, list.APIResources)}
	if prev, ok := c.byGV[gv]; ok && !c.stale[gv] && equalJSON(prev, d) {
		return
	}
	c.byGV[gv] = d
	delete(c.stale, gv)
	c.merged = nil
}

// forget drops group versions no longer served remotely.
func (c *discoveryCache) forget(keep map[schema.GroupVersion]*remoteAPI) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for gv := range c.byGV {
		if _, ok := keep[gv]; !ok {
			delete(c.byGV, gv)
			delete(c.stale, gv)
			c.merged = nil
		}
	}
	for gv := range c.openAPIV3 {
		if _, ok := keep[gv]; !ok {
			delete(c.openAPIV3, gv)
		}
	}
}

func (c *discoveryCache) invalidate() {
	c.mu.Lock()
	c.merged = nil
	c.mu.Unlock()
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// toDiscoveryV2 is upstream's ConvertGroupVersionIntoToDiscovery
// (k8s.io/apiserver/pkg/endpoints): "resource/sub" entries become
// subresources of their resource.
func toDiscoveryV2(gv schema.GroupVersion, list []metav1.APIResource) []apidiscoveryv2.APIResourceDiscovery {
	var out []apidiscoveryv2.APIResourceDiscovery
	index := map[string]int{}
	kind := func(r metav1.APIResource) *metav1.GroupVersionKind {
		k := &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: r.Kind}
		if r.Group != "" {
			k.Group = r.Group
		}
		if r.Version != "" {
			k.Version = r.Version
		}
		return k
	}
	for _, r := range list {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(out)
		out = append(out, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, Scope: scope, SingularResource: r.SingularName, ResponseKind: kind(r),
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	for _, r := range list {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		i, ok := index[parent]
		if !ok {
			continue // upstream drops a subresource without its resource too
		}
		out[i].Subresources = append(out[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kind(r), Verbs: r.Verbs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// recorder captures the API server's answer to an in-process request.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// serveAPIs answers /apis: the API server's document (aggregated or the
// APIGroupList, whichever the client negotiated with it) with the remote
// group versions added.
func (a *Aggregator) serveAPIs(w http.ResponseWriter, r *http.Request, delegate http.Handler, t *routeTable) {
	c := &a.discovery
	c.mu.Lock()
	localETag := c.localETag
	c.mu.Unlock()
	local := r.Clone(r.Context())
	local.Method = http.MethodGet // a HEAD's answer has no document to merge
	local.Header.Del("If-None-Match")
	if localETag != "" {
		local.Header.Set("If-None-Match", localETag)
	}
	rec := &recorder{header: http.Header{}}
	delegate.ServeHTTP(rec, local)
	ct := rec.header.Get("Content-Type")
	switch {
	case rec.status() == http.StatusNotModified || (rec.status() == http.StatusOK && strings.Contains(ct, "as=APIGroupDiscoveryList")):
		body, etag, err := a.mergedAggregated(rec, t)
		if err != nil {
			a.log.Error("merging aggregated discovery", "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", aggregatedDiscoveryType)
		w.Header().Set("ETag", etag)
		w.Header().Set("Vary", "Accept")
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(body)
	case rec.status() == http.StatusOK:
		var list metav1.APIGroupList
		if err := json.Unmarshal(rec.body.Bytes(), &list); err != nil {
			copyResponse(w, rec)
			return
		}
		list.Groups = a.mergeGroupList(list.Groups, t)
		writeJSON(w, &list)
	default:
		copyResponse(w, rec)
	}
}

func copyResponse(w http.ResponseWriter, rec *recorder) {
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status())
	_, _ = w.Write(rec.body.Bytes())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Vary", "Accept")
	_ = json.NewEncoder(w).Encode(v)
}

// mergedAggregated returns the merged aggregated document, rebuilding it
// only when the local document or a remote one changed. rec holds the
// local document, or a 304 meaning the one cached is current.
func (a *Aggregator) mergedAggregated(rec *recorder, t *routeTable) ([]byte, string, error) {
	c := &a.discovery
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec.status() == http.StatusOK {
		// Without an ETag the document cannot be compared: take it.
		if etag := rec.header.Get("ETag"); etag == "" || etag != c.localETag || c.localBody == nil {
			c.localETag, c.localBody, c.merged = etag, append([]byte(nil), rec.body.Bytes()...), nil
		}
	}
	if c.merged != nil {
		return c.merged, c.etag, nil
	}
	var doc apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(c.localBody, &doc); err != nil {
		return nil, "", fmt.Errorf("decoding the local aggregated discovery: %w", err)
	}
	at := map[string]int{}
	for i, g := range doc.Items {
		at[g.Name] = i
	}
	for _, group := range t.order {
		var versions []apidiscoveryv2.APIVersionDiscovery
		for _, s := range t.remoteGroups[group] {
			gv := schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
			if s.Spec.Service == nil {
				continue // the local document has it, if it is served
			}
			d, ok := c.byGV[gv]
			if !ok {
				continue // never reached: upstream leaves it out too
			}
			fresh := apidiscoveryv2.DiscoveryFreshnessCurrent
			if c.stale[gv] {
				fresh = apidiscoveryv2.DiscoveryFreshnessStale
			}
			versions = append(versions, apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Resources: d.resources, Freshness: fresh})
		}
		if len(versions) == 0 {
			continue
		}
		if i, ok := at[group]; ok {
			doc.Items[i].Versions = append(doc.Items[i].Versions, versions...)
			continue
		}
		doc.Items = append(doc.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group}, Versions: versions})
	}
	body, err := json.Marshal(&doc)
	if err != nil {
		return nil, "", err
	}
	c.merged, c.etag = body, fmt.Sprintf("%q", fmt.Sprintf("%X", sha256.Sum256(body)))
	return c.merged, c.etag, nil
}

// mergeGroupList adds the remote groups to the API server's APIGroupList,
// as upstream's apisHandler lists every APIService's group.
func (a *Aggregator) mergeGroupList(local []metav1.APIGroup, t *routeTable) []metav1.APIGroup {
	at := map[string]int{}
	for i, g := range local {
		at[g.Name] = i
	}
	for _, group := range t.order {
		grp := apiGroup(group, t)
		if i, ok := at[group]; ok {
			for _, v := range grp.Versions {
				if !hasVersion(local[i].Versions, v.Version) {
					local[i].Versions = append(local[i].Versions, v)
				}
			}
			continue
		}
		local = append(local, *grp)
	}
	return local
}

func hasVersion(vs []metav1.GroupVersionForDiscovery, v string) bool {
	for _, have := range vs {
		if have.Version == v {
			return true
		}
	}
	return false
}

// apiGroup is upstream's apiGroupHandler document: every APIService of
// the group, highest version priority first, the first preferred.
func apiGroup(group string, t *routeTable) *metav1.APIGroup {
	grp := &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group}
	for _, s := range t.remoteGroups[group] {
		grp.Versions = append(grp.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + s.Spec.Version, Version: s.Spec.Version})
	}
	if len(grp.Versions) > 0 {
		grp.PreferredVersion = grp.Versions[0]
	}
	return grp
}

// serveGroup answers /apis/<group> for a group with a remote version.
func (a *Aggregator) serveGroup(w http.ResponseWriter, r *http.Request, delegate http.Handler, t *routeTable, group string) {
	grp := apiGroup(group, t)
	rec := &recorder{header: http.Header{}}
	local := r.Clone(r.Context())
	local.Method = http.MethodGet
	delegate.ServeHTTP(rec, local)
	if rec.status() == http.StatusOK {
		// The group has local versions too: the APIServices list them all.
		var local metav1.APIGroup
		if err := json.Unmarshal(rec.body.Bytes(), &local); err == nil && local.Name == group {
			for _, v := range local.Versions {
				if !hasVersion(grp.Versions, v.Version) {
					grp.Versions = append(grp.Versions, v)
				}
			}
		}
	}
	writeJSON(w, grp)
}
