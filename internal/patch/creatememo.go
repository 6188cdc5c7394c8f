package patch

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Create is Update for a create: empty is the kind's empty object (such as
// registry.Resource.New()) and newObj the object to be created.
//
// The managed fields of a create are a function of the object as JSON,
// less the metadata they never hold (name, namespace, uid,
// creationTimestamp, generation, resourceVersion, selfLink: upstream's
// stripMeta), and of the manager: the ReplicaSet controller's 30 pods of
// one ReplicaSet all get the same set (the API server records it before
// mutating admission, as upstream, so the token volume the ServiceAccount
// plugin names for each pod is in none). Upstream computes it each time by
// comparing the object with the empty one through structured-merge-diff's
// reflection, ~100–170 µs for a pod, a quarter of a pod create's CPU; Create
// remembers the result by a digest of that JSON and reuses it. JSON is the
// key because structured-merge-diff reads a typed object as encoding/json
// writes it (the same field names, omitempty and omitzero, and the types'
// own marshalers), so equal JSON means an equal comparison, but for
// strings that are not UTF-8, which are left to Update. Protobuf would not
// do: it does not tell a nil slice from an empty one, which
// structured-merge-diff does for fields without omitempty.
//
// A client that sent managedFields, custom resources (whose schema may
// change) and a kind and manager whose creates rarely repeat (events) go to
// Update as before. The result is upstream's, its time being now.
func (f *FieldManagers) Create(empty, newObj runtime.Object, manager string) (runtime.Object, error) {
	gvk, key, ok := f.createKey(newObj, manager)
	if !ok {
		return f.Update(empty, newObj, manager, "")
	}
	if r, hit := f.created.get(gvk, manager, key); hit {
		na, _ := meta.Accessor(newObj) // createKey checked it
		na.SetManagedFields([]metav1.ManagedFieldsEntry{{
			Manager:    manager,
			Operation:  metav1.ManagedFieldsOperationUpdate,
			APIVersion: r.apiVersion,
			Time:       &metav1.Time{Time: time.Now().UTC()},
			FieldsType: "FieldsV1",
			FieldsV1:   &metav1.FieldsV1{Raw: bytes.Clone(r.fields)},
		}})
		return newObj, nil
	}
	out, err := f.Update(empty, newObj, manager, "")
	if err == nil {
		if r, ok := soleCreateEntry(out, manager); ok {
			f.created.put(key, r)
		}
	}
	return out, err
}

// createKey is the digest Create remembers newObj's managed fields by, or
// false when they are not to be remembered.
func (f *FieldManagers) createKey(newObj runtime.Object, manager string) (schema.GroupVersionKind, [sha256.Size]byte, bool) {
	var key [sha256.Size]byte
	if f.cfg.CustomResources {
		return schema.GroupVersionKind{}, key, false
	}
	na, err := meta.Accessor(newObj)
	if err != nil || len(na.GetManagedFields()) != 0 {
		return schema.GroupVersionKind{}, key, false
	}
	gvk, err := f.kindOf(newObj)
	if err != nil || !f.created.trying(gvk, manager) {
		return schema.GroupVersionKind{}, key, false
	}
	raw, err := strippedJSON(newObj, na)
	if err != nil || bytes.Contains(raw, invalidUTF8JSON) {
		return schema.GroupVersionKind{}, key, false
	}
	h := sha256.New()
	h.Write([]byte(gvk.String()))
	h.Write([]byte{0})
	h.Write([]byte(manager))
	h.Write([]byte{0})
	h.Write(raw)
	h.Sum(key[:0])
	return gvk, key, true
}

// invalidUTF8JSON is what encoding/json writes for each byte of a string
// that is not UTF-8, so strings differing there have the same JSON, while
// structured-merge-diff reads the strings themselves (a valid U+FFFD is
// written as is, a backslash escaped).
var invalidUTF8JSON = []byte(`\ufffd`)

// strippedJSON is obj as JSON without the metadata stripMeta leaves out of
// every managed set, which differs between otherwise equal creates. The
// fields are cleared on obj itself and put back.
func strippedJSON(obj runtime.Object, m metav1.Object) ([]byte, error) {
	name, ns, uid := m.GetName(), m.GetNamespace(), m.GetUID()
	created, gen, rv, link := m.GetCreationTimestamp(), m.GetGeneration(), m.GetResourceVersion(), m.GetSelfLink()
	m.SetName("")
	m.SetNamespace("")
	m.SetUID("")
	m.SetCreationTimestamp(metav1.Time{})
	m.SetGeneration(0)
	m.SetResourceVersion("")
	m.SetSelfLink("")
	defer func() {
		m.SetName(name)
		m.SetNamespace(ns)
		m.SetUID(uid)
		m.SetCreationTimestamp(created)
		m.SetGeneration(gen)
		m.SetResourceVersion(rv)
		m.SetSelfLink(link)
	}()
	return json.Marshal(obj)
}

// soleCreateEntry is what Create may reuse from Update's result: its one
// entry, manager's Update of the main resource. Anything else (no fields,
// so no entry) is left to Update every time.
func soleCreateEntry(out runtime.Object, manager string) (createResult, bool) {
	a, err := meta.Accessor(out)
	if err != nil {
		return createResult{}, false
	}
	mf := a.GetManagedFields()
	if len(mf) != 1 {
		return createResult{}, false
	}
	e := &mf[0]
	if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationUpdate || e.Subresource != "" ||
		e.FieldsType != "FieldsV1" || e.FieldsV1 == nil || e.Time == nil {
		return createResult{}, false
	}
	return createResult{apiVersion: e.APIVersion, fields: bytes.Clone(e.FieldsV1.Raw)}, true
}

type createResult struct {
	apiVersion string
	fields     []byte // the entry's fieldsV1
}

// The memo's bounds: each generation holds up to memoGeneration results,
// the previous generation is kept for lookups, so at most twice that are
// held (~1 KB each for a pod). A kind and manager is tried for
// memoWindow creates; with fewer than one hit in memoMinHitRate of them
// it is not tried for the next memoRest creates.
const (
	memoGeneration = 1024
	memoWindow     = 256
	memoMinHitRate = 8
	memoRest       = 4096
)

// createMemo holds recent creates' managed fields by createKey's digest.
type createMemo struct {
	mu        sync.Mutex
	cur, prev map[[sha256.Size]byte]createResult
	kinds     map[kindManager]*memoStats
	// hits and misses are for tests and benchmarks.
	hits, misses int
}

type kindManager struct {
	gvk     schema.GroupVersionKind
	manager string
}

// memoStats is a kind and manager's recent record: tried and hit in the
// current window, or resting (skipped creates left) after a poor one.
type memoStats struct {
	tried, hit, resting int
}

// trying reports whether Create should look gvk's creates by manager up.
func (c *createMemo) trying(gvk schema.GroupVersionKind, manager string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil {
		c.kinds = map[kindManager]*memoStats{}
	}
	k := kindManager{gvk, manager}
	s := c.kinds[k]
	if s == nil {
		if len(c.kinds) >= memoGeneration {
			// Managers are client-chosen names: forget them all rather
			// than grow without bound.
			clear(c.kinds)
		}
		s = &memoStats{}
		c.kinds[k] = s
	}
	if s.tried == memoWindow {
		if s.hit*memoMinHitRate < s.tried {
			s.resting = memoRest
		}
		s.tried, s.hit = 0, 0
	}
	if s.resting > 0 {
		s.resting--
		return false
	}
	s.tried++
	return true
}

func (c *createMemo) get(gvk schema.GroupVersionKind, manager string, key [sha256.Size]byte) (createResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.cur[key]
	if !ok {
		if r, ok = c.prev[key]; ok {
			c.putLocked(key, r)
		}
	}
	if ok {
		c.hits++
		if s := c.kinds[kindManager{gvk, manager}]; s != nil {
			s.hit++
		}
	} else {
		c.misses++
	}
	return r, ok
}

func (c *createMemo) put(key [sha256.Size]byte, r createResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(key, r)
}

func (c *createMemo) putLocked(key [sha256.Size]byte, r createResult) {
	if len(c.cur) >= memoGeneration {
		c.prev, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[[sha256.Size]byte]createResult, memoGeneration)
	}
	c.cur[key] = r
}
