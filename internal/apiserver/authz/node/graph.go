package node

import (
	"strings"
	"sync"
)

// kind is a vertex's object type.
type kind uint8

const (
	kindPod kind = iota
	kindSecret
	kindConfigMap
	kindPVC
	kindPV
	kindServiceAccount
	kindResourceClaim
	kindVolumeAttachment
	kindResourceSlice
	numKinds
)

var kindNames = [numKinds]string{
	kindPod:              "pod",
	kindSecret:           "secret",
	kindConfigMap:        "configmap",
	kindPVC:              "pvc",
	kindPV:               "pv",
	kindServiceAccount:   "serviceAccount",
	kindResourceClaim:    "resourceclaim",
	kindVolumeAttachment: "volumeattachment",
	kindResourceSlice:    "resourceslice",
}

func (k kind) String() string { return kindNames[k] }

// objectRef names an object within its kind.
type objectRef struct{ namespace, name string }

// nodeVertex is a node some vertex leads to. It lives while pods, volume
// attachments or resource slices are bound to it (refs), so the graph holds
// no node that nothing points at.
type nodeVertex struct {
	name string
	refs int32
}

// vertex is one object of the graph. Upstream keeps a general directed
// graph and searches it per request; here every path a request can ask
// about is at most three steps long (secret → PV → PVC → pod → node), so
// each vertex keeps the nodes it leads to directly, counted by the pods
// that lead there, and a request is a lookup.
//
//   - A pod (a source: it lives until it is deleted) leads to its node and
//     holds out, the objects it references (each once).
//   - A secret, configmap, PVC, service account or resource claim leads to
//     the nodes of the pods that reference it; it lives while some pod or
//     PV references it.
//   - A PV (a source) holds out = [its claim, its kubelet-visible
//     secrets]; it leads wherever its claim leads, and a secret it
//     references leads there too (both through pvs).
//   - A volume attachment or resource slice (sources) leads to its node.
//
// The struct is kept small (80 bytes) because there is one per pod: the
// fields few vertices need are behind ext.
type vertex struct {
	// key is "namespace/name" ("/name" when cluster-scoped): one string,
	// allocated by the graph, so nothing of the object it was read from
	// is kept alive.
	key string
	// node and nodeN: the first node this vertex leads to and the number
	// of edges leading there; ext.more holds any others. A node is in one
	// of the two, never both.
	node  *nodeVertex
	nodeN int32
	// mark is the generation of the last relist that saw a source, so a
	// relist can drop the ones it did not see.
	mark   uint32
	kind   kind
	source bool

	out []*vertex
	ext *vertexExt
}

// vertexExt holds what only shared objects need.
type vertexExt struct {
	more map[*nodeVertex]int32
	// pvs are the PVs that reference this vertex (a PVC or a secret).
	pvs []*vertex
}

func (v *vertex) namespace() string { return v.key[:strings.IndexByte(v.key, '/')] }

func (v *vertex) pvs() []*vertex {
	if v.ext == nil {
		return nil
	}
	return v.ext.pvs
}

func (v *vertex) more() map[*nodeVertex]int32 {
	if v.ext == nil {
		return nil
	}
	return v.ext.more
}

func (v *vertex) setPVs(pvs []*vertex) {
	if v.ext == nil {
		if len(pvs) == 0 {
			return
		}
		v.ext = &vertexExt{}
	}
	v.ext.pvs = pvs
	v.trimExt()
}

func (v *vertex) trimExt() {
	if v.ext != nil && len(v.ext.pvs) == 0 && len(v.ext.more) == 0 {
		v.ext = nil
	}
}

// leadsTo reports whether v has an edge to n.
func (v *vertex) leadsTo(n *nodeVertex) bool {
	if v.nodeN > 0 && v.node == n {
		return true
	}
	return v.more()[n] > 0
}

// addEdge changes by delta the number of v's edges to n.
func (v *vertex) addEdge(n *nodeVertex, delta int32) {
	switch {
	case v.nodeN > 0 && v.node == n:
		v.nodeN += delta
		if v.nodeN <= 0 {
			v.node, v.nodeN = nil, 0
		}
		return
	case v.nodeN == 0 && delta > 0 && v.more()[n] == 0:
		v.node, v.nodeN = n, delta
		return
	}
	c := v.more()[n] + delta
	if c <= 0 {
		if v.ext != nil {
			delete(v.ext.more, n)
			v.trimExt()
		}
		return
	}
	if v.ext == nil {
		v.ext = &vertexExt{}
	}
	if v.ext.more == nil {
		v.ext.more = make(map[*nodeVertex]int32, 1)
	}
	v.ext.more[n] = c
}

// unused reports whether a non-source vertex has nothing pointing at it.
func (v *vertex) unused() bool {
	return !v.source && v.nodeN == 0 && v.ext == nil
}

// Graph is which objects lead to which nodes. Its methods are safe for
// concurrent use: writers (the reflectors) take mu, readers (Authorize)
// share it.
type Graph struct {
	mu sync.RWMutex
	// guarded by mu:
	vertices [numKinds]map[string]*vertex
	nodes    map[string]*nodeVertex
	// mark is the current relist generation of each source kind.
	mark [numKinds]uint32
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	g := &Graph{nodes: map[string]*nodeVertex{}}
	for k := range g.vertices {
		g.vertices[k] = map[string]*vertex{}
	}
	return g
}

// HasPath reports whether the object of kind k named namespace/name leads
// to node nodeName: a pod bound to it, an object such a pod references, a
// PV claimed by such a PVC, a secret of such a PV, or an attachment or
// slice of the node.
func (g *Graph) HasPath(nodeName string, k kind, namespace, name string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[nodeName]
	if !ok {
		return false
	}
	v, ok := g.lookupLocked(k, namespace, name)
	if !ok {
		return false
	}
	switch k {
	case kindPV:
		return len(v.out) > 0 && v.out[0].leadsTo(n)
	case kindSecret:
		if v.leadsTo(n) {
			return true
		}
		for _, pv := range v.pvs() {
			if pv.out[0].leadsTo(n) {
				return true
			}
		}
		return false
	}
	return v.leadsTo(n)
}

// nodeLocked returns the node named name, taking a reference to it.
func (g *Graph) nodeLocked(name string) *nodeVertex {
	n, ok := g.nodes[name]
	if !ok {
		n = &nodeVertex{name: strings.Clone(name)}
		g.nodes[n.name] = n
	}
	n.refs++
	return n
}

// releaseNodeLocked drops a reference to n.
func (g *Graph) releaseNodeLocked(n *nodeVertex) {
	if n.refs--; n.refs <= 0 {
		delete(g.nodes, n.name)
	}
}

// lookupLocked finds vertex k namespace/name without allocating (the
// compiler does not copy a []byte converted to index a map).
func (g *Graph) lookupLocked(k kind, namespace, name string) (*vertex, bool) {
	var buf [128]byte
	b := append(append(append(buf[:0], namespace...), '/'), name...)
	v, ok := g.vertices[k][string(b)]
	return v, ok
}

// vertexLocked returns the vertex k namespace/name, creating it (with
// copies of the strings, so that the graph keeps nothing of the object it
// was read from) if there is none.
func (g *Graph) vertexLocked(k kind, namespace, name string) *vertex {
	if v, ok := g.lookupLocked(k, namespace, name); ok {
		return v
	}
	v := &vertex{key: namespace + "/" + name, kind: k}
	g.vertices[k][v.key] = v
	return v
}

// sourceLocked creates the source vertex k namespace/name, which must not
// exist.
func (g *Graph) sourceLocked(k kind, namespace, name string) *vertex {
	v := g.vertexLocked(k, namespace, name)
	v.source = true
	v.mark = g.mark[k]
	return v
}

// dropIfUnusedLocked removes v if nothing points at it any more.
func (g *Graph) dropIfUnusedLocked(v *vertex) {
	if v.unused() {
		delete(g.vertices[v.kind], v.key)
	}
}

// deleteSourceLocked removes the source vertex k namespace/name and every
// edge it contributed.
func (g *Graph) deleteSourceLocked(k kind, namespace, name string) {
	v, ok := g.lookupLocked(k, namespace, name)
	if !ok {
		return
	}
	switch k {
	case kindPod:
		for _, o := range v.out {
			o.addEdge(v.node, -1)
			g.dropIfUnusedLocked(o)
		}
	case kindPV:
		for _, o := range v.out {
			o.setPVs(removeVertex(o.pvs(), v))
			g.dropIfUnusedLocked(o)
		}
	}
	if v.node != nil {
		g.releaseNodeLocked(v.node)
	}
	delete(g.vertices[k], v.key)
}

func removeVertex(vs []*vertex, v *vertex) []*vertex {
	for i, x := range vs {
		if x == v {
			vs[i] = vs[len(vs)-1]
			vs[len(vs)-1] = nil
			vs = vs[:len(vs)-1]
			break
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// podEdges is what the graph keeps of a pod: its node and the objects it
// references, each once, in its namespace.
type podEdges struct {
	namespace, name, node string
	refs                  []podRef
}

// podRef is one object a pod references.
type podRef struct {
	kind kind
	name string
}

// samePodLocked reports whether the pod vertex v already holds exactly
// e's node and references, so an update that changed neither (almost all
// of them: status updates) needs no write lock.
func (g *Graph) samePodLocked(v *vertex, e *podEdges) bool {
	if v.node == nil || v.node.name != e.node || len(v.out) != len(e.refs) {
		return false
	}
	for _, r := range e.refs {
		o, ok := g.lookupLocked(r.kind, e.namespace, r.name)
		if !ok || !containsVertex(v.out, o) {
			return false
		}
	}
	return true
}

func containsVertex(vs []*vertex, v *vertex) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// setPod makes the graph hold pod e as it is now: bound to e.node and
// referencing e.refs. A pod with no node is not in the graph. e.refs must
// hold each object once.
func (g *Graph) setPod(e *podEdges) {
	g.mu.RLock()
	v, ok := g.lookupLocked(kindPod, e.namespace, e.name)
	same := ok && e.node != "" && g.samePodLocked(v, e)
	marked := same && v.mark == g.mark[kindPod]
	g.mu.RUnlock()
	if marked {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if same {
		// Only a relist's mark to record. The pod may have changed
		// since the read lock was dropped; the reflector is the only
		// writer of pods, so it has not.
		v.mark = g.mark[kindPod]
		return
	}
	g.deleteSourceLocked(kindPod, e.namespace, e.name)
	if e.node == "" {
		return
	}
	v = g.sourceLocked(kindPod, e.namespace, e.name)
	v.node, v.nodeN = g.nodeLocked(e.node), 1
	if len(e.refs) > 0 {
		v.out = make([]*vertex, 0, len(e.refs))
	}
	for _, r := range e.refs {
		o := g.vertexLocked(r.kind, e.namespace, r.name)
		o.addEdge(v.node, 1)
		v.out = append(v.out, o)
	}
}

// deletePod removes pod namespace/name.
func (g *Graph) deletePod(namespace, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleteSourceLocked(kindPod, namespace, name)
}

// pvEdges is what the graph keeps of a PV: its claim and the secrets a
// kubelet reads for it.
type pvEdges struct {
	name                      string
	claimNamespace, claimName string // empty: not claimed
	secrets                   []objectRef
}

// setPV makes the graph hold PV e as it is now. An unclaimed PV is not in
// the graph (nothing can lead from it to a node).
func (g *Graph) setPV(e *pvEdges) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleteSourceLocked(kindPV, "", e.name)
	if e.claimName == "" {
		return
	}
	v := g.sourceLocked(kindPV, "", e.name)
	pvc := g.vertexLocked(kindPVC, e.claimNamespace, e.claimName)
	pvc.setPVs(append(pvc.pvs(), v))
	v.out = append(make([]*vertex, 0, 1+len(e.secrets)), pvc)
	for _, s := range e.secrets {
		sv := g.vertexLocked(kindSecret, s.namespace, s.name)
		if containsVertex(v.out[1:], sv) {
			continue
		}
		sv.setPVs(append(sv.pvs(), v))
		v.out = append(v.out, sv)
	}
}

// deletePV removes PV name.
func (g *Graph) deletePV(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleteSourceLocked(kindPV, "", name)
}

// setNodeObject makes the graph hold the volume attachment or resource
// slice (k) name as bound to nodeName ("" for none).
func (g *Graph) setNodeObject(k kind, name, nodeName string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.lookupLocked(k, "", name); ok && v.node != nil && v.node.name == nodeName {
		v.mark = g.mark[k]
		return
	}
	g.deleteSourceLocked(k, "", name)
	if nodeName == "" {
		return
	}
	v := g.sourceLocked(k, "", name)
	v.node, v.nodeN = g.nodeLocked(nodeName), 1
}

// deleteNodeObject removes the volume attachment or resource slice (k) name.
func (g *Graph) deleteNodeObject(k kind, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleteSourceLocked(k, "", name)
}

// beginRelist starts a relist of kind k: sources set from now on are
// marked as seen by it.
func (g *Graph) beginRelist(k kind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mark[k]++
}

// endRelist removes the sources of kind k the relist did not see (deleted
// while no watch was open).
func (g *Graph) endRelist(k kind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var gone []*vertex
	for _, v := range g.vertices[k] {
		if v.source && v.mark != g.mark[k] {
			gone = append(gone, v)
		}
	}
	for _, v := range gone {
		g.deleteSourceLocked(k, v.namespace(), v.key[len(v.namespace())+1:])
	}
}

// Stats counts the graph's vertices, for tests and benchmarks.
type Stats struct {
	Nodes    int
	Vertices [numKinds]int
}

// Stats returns the graph's current size.
func (g *Graph) Stats() Stats {
	g.mu.RLock()
	defer g.mu.RUnlock()
	s := Stats{Nodes: len(g.nodes)}
	for k := range g.vertices {
		s.Vertices[k] = len(g.vertices[k])
	}
	return s
}
