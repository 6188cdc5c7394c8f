package patch

import (
	"bytes"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// UpdateKnown is Update for a write whose caller knows exactly which leaf
// fields differ between live and newObj: changed are fields whose values
// were modified (none added, none removed), and nothing else differs but
// metadata the managers never own (resourceVersion, managedFields, the
// type's apiVersion and kind). A heartbeat is the case it is for: a
// kubelet's Lease renewal moves spec.renewTime, its Node status update
// the conditions' lastHeartbeatTime, and at 10,000 nodes those are a
// thousand writes a second whose managedFields upstream's field manager
// would recompute by converting both objects to structured-merge-diff's
// typed values and comparing them.
//
// When the result is certain from the managedFields alone, UpdateKnown
// returns newObj carrying it, and true; otherwise it leaves newObj alone
// and returns false, and the caller runs Update. The result is upstream's
// (managedfields' managedFieldsUpdater under the default field manager):
//
//   - no changed field survives the kind's reset fields for the
//     subresource: managedFields stay as they are, timestamps included;
//   - every surviving field is owned by manager's own Update entry (same
//     apiVersion and subresource) and by no other entry: that entry's time
//     moves to now and the entries are re-sorted as upstream encodes them;
//   - anything else (a field taken from another manager or new to this one,
//     an entry in another apiVersion, more than the cap of update entries,
//     managedFields the client reset or rewrote, an entry upstream would
//     drop or fail to decode): false.
//
// It relies on one invariant of the API server: stored managedFields were
// written by upstream's encoder (every write goes through Update or
// Apply), so each entry's fieldsV1 is the canonical encoding of its set
// and an unchanged set needs no re-encoding.
func (f *FieldManagers) UpdateKnown(live, newObj runtime.Object, manager, subresource string, changed []fieldpath.Path) (runtime.Object, bool) {
	la, err := meta.Accessor(live)
	if err != nil {
		return nil, false
	}
	na, err := meta.Accessor(newObj)
	if err != nil {
		return nil, false
	}
	liveMF := la.GetManagedFields()
	if len(liveMF) == 0 {
		// Upstream's skipNonApplied leaves an untracked object untracked,
		// cheaply; Update does that.
		return nil, false
	}
	if subresource == "" {
		// The main resource honours managedFields the client sent: nil
		// means "keep live's"; the same entries mean the same; anything
		// else (a reset, an edit) is Update's.
		if sent := na.GetManagedFields(); sent != nil && !SameManagedFields(sent, liveMF) {
			return nil, false
		}
	}
	gvk, err := f.kindOf(newObj)
	if err != nil {
		return nil, false
	}
	apiVersion := gvk.GroupVersion().String()
	own, updates := -1, 0
	for i := range liveMF {
		e := &liveMF[i]
		switch {
		case e.APIVersion != apiVersion, e.FieldsType != "FieldsV1", e.FieldsV1 == nil,
			bytes.Equal(e.FieldsV1.Raw, emptySetJSON):
			// Another version needs conversion to compare; upstream drops
			// empty entries; the rest would not decode.
			return nil, false
		case e.Operation == metav1.ManagedFieldsOperationUpdate:
			updates++
			if e.Manager == manager && e.Subresource == subresource {
				own = i
			}
		case e.Operation != metav1.ManagedFieldsOperationApply:
			return nil, false
		}
	}
	if updates > maxUpdateManagers {
		return nil, false
	}
	paths := f.surviving(gvk, subresource, changed)
	if len(paths) == 0 {
		na.SetManagedFields(liveMF)
		return newObj, true
	}
	if own < 0 {
		return nil, false
	}
	wants := make([][]string, len(paths))
	for j, p := range paths {
		var ok bool
		if wants[j], ok = serializePath(p); !ok {
			return nil, false
		}
	}
	for i := range liveMF {
		for _, want := range wants {
			// The manager must already own every field (else its set
			// grows and must be re-encoded), and no one else may (else
			// the write takes the field from them).
			has, ok := fieldsHas(liveMF[i].FieldsV1.Raw, want)
			if !ok || has != (i == own) {
				return nil, false
			}
		}
	}
	out := make([]metav1.ManagedFieldsEntry, len(liveMF))
	copy(out, liveMF)
	out[own].Time = &metav1.Time{Time: time.Now().UTC()}
	sortEntries(out)
	na.SetManagedFields(out)
	return newObj, true
}

// maxUpdateManagers is upstream's DefaultMaxUpdateManagers: beyond it the
// oldest update entries are merged, which UpdateKnown leaves to Update.
const maxUpdateManagers = 10

var emptySetJSON = []byte("{}")

// surviving is changed less the fields the kind's writers through
// subresource never own (Config.ResetFields), as upstream filters the
// comparison before it assigns fields.
func (f *FieldManagers) surviving(gvk schema.GroupVersionKind, subresource string, changed []fieldpath.Path) []fieldpath.Path {
	if len(changed) == 0 || f.cfg.ResetFields == nil {
		return changed
	}
	reset := f.cfg.ResetFields(gvk, subresource)
	if reset == nil {
		return changed
	}
	var out []fieldpath.Path
	for _, p := range changed {
		if !underAny(reset, p) {
			out = append(out, p)
		}
	}
	return out
}

// underAny reports whether p or one of its prefixes is in set: a reset
// field removes its whole subtree (Set.RecursiveDifference).
func underAny(set *fieldpath.Set, p fieldpath.Path) bool {
	for i := 1; i <= len(p); i++ {
		if set.Has(p[:i]) {
			return true
		}
	}
	return false
}

// SameManagedFields reports whether a and b are the same managedFields
// entries, times compared as they are serialized (whole seconds).
func SameManagedFields(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion ||
			x.FieldsType != y.FieldsType || x.Subresource != y.Subresource ||
			unixOf(x.Time) != unixOf(y.Time) || (x.Time == nil) != (y.Time == nil) ||
			(x.FieldsV1 == nil) != (y.FieldsV1 == nil) ||
			(x.FieldsV1 != nil && !bytes.Equal(x.FieldsV1.Raw, y.FieldsV1.Raw)) {
			return false
		}
	}
	return true
}

func unixOf(t *metav1.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// sortEntries orders managedFields entries as upstream's encoder does
// (managedfields' sortEncodedManagedFields): by operation, time in
// seconds, manager, apiVersion, subresource.
func sortEntries(es []metav1.ManagedFieldsEntry) {
	sort.Slice(es, func(i, j int) bool {
		p, q := &es[i], &es[j]
		if p.Operation != q.Operation {
			return p.Operation < q.Operation
		}
		if ps, qs := unixOf(p.Time), unixOf(q.Time); ps != qs {
			return ps < qs
		}
		if p.Manager != q.Manager {
			return p.Manager < q.Manager
		}
		if p.APIVersion != q.APIVersion {
			return p.APIVersion < q.APIVersion
		}
		return p.Subresource < q.Subresource
	})
}
