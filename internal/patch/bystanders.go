package patch

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A write's bystanders are the managedFields entries it cannot change:
// another manager's (or another operation's or subresource's) entries
// whose every field lies under the write's reset top-level fields (a
// status write's spec and metadata, a main-resource write's status).
// Upstream compares with those fields filtered out, so it takes no field
// from such an entry and removes none; it only decodes the entry's set,
// reconciles it with the schema and encodes it again, unchanged. For a
// kubelet's status write on a pod that is the creator's set, most of the
// managedFields bytes: a third of the write's managedFields CPU
// (BenchmarkFieldManagersStatus).
//
// setAside hands upstream's field manager the entries with all bystanders
// standing in for one placeholder entry that owns a reset top-level field
// alone: it keeps the managed fields non-empty (an update of an object
// with no managed fields is not tracked, skipNonAppliedManager) and, being
// under a reset field, is neither taken from nor changed. restore then
// swaps the bystanders back in for it, as upstream would have encoded
// them (stored entries are canonical: UpdateKnown's invariant), in
// upstream's order.
type bystanders struct {
	entries []metav1.ManagedFieldsEntry
}

// placeholderManager names the stand-in; no client's manager can, since
// setAside steps aside when one does.
const placeholderManager = "\x00bystanders"

// setAside returns the entries to hand upstream's field manager in place
// of liveMF, one placeholder standing in for the bystanders, and the
// bystanders; nil when there are none or the write is one it does not
// handle: the managedFields upstream would use are not live's (a
// main-resource write that sent others than liveMF), an entry upstream
// would not decode or would drop, so many update entries that the write's
// could pass the cap (capManagersManager merges entries then).
func (p *trimPlan) setAside(liveMF, sent []metav1.ManagedFieldsEntry, apiVersion, manager, subresource string) ([]metav1.ManagedFieldsEntry, *bystanders) {
	if len(p.tops) == 0 || manager == placeholderManager {
		return nil, nil
	}
	if subresource == "" && sent != nil && !SameManagedFields(sent, liveMF) {
		return nil, nil
	}
	var b bystanders
	kept := make([]metav1.ManagedFieldsEntry, 0, len(liveMF))
	updates := 0
	for _, e := range liveMF {
		if e.Manager == placeholderManager || e.APIVersion != apiVersion || e.FieldsType != "FieldsV1" || e.FieldsV1 == nil ||
			bytes.Equal(e.FieldsV1.Raw, emptySetJSON) {
			return nil, nil
		}
		switch e.Operation {
		case metav1.ManagedFieldsOperationUpdate:
			updates++
		case metav1.ManagedFieldsOperationApply:
		default:
			return nil, nil
		}
		own := e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == subresource
		if !own && p.under(e.FieldsV1.Raw) {
			b.entries = append(b.entries, e)
			continue
		}
		kept = append(kept, e)
	}
	if len(b.entries) == 0 || updates+1 > maxUpdateManagers {
		return nil, nil
	}
	kept = append(kept, metav1.ManagedFieldsEntry{
		Manager: placeholderManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: apiVersion,
		Time: b.entries[0].Time, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: p.placeholder},
	})
	return kept, &b
}

// under reports whether every top-level key of the set raw encodes is
// one of the plan's reset top-level fields.
func (p *trimPlan) under(raw []byte) bool {
	s := fieldsScanner{b: raw}
	return s.object(func(key []byte) bool {
		for _, t := range p.tops {
			if jsonStringIs(key, t) {
				return true
			}
		}
		return false
	}) && s.end()
}

// restore is managedFields, upstream's result with the placeholder, with
// the bystanders in its place, in upstream's order. It reports false when
// the placeholder is missing or changed, which a bug alone would cause.
func (b *bystanders) restore(managedFields []metav1.ManagedFieldsEntry, placeholder []byte) ([]metav1.ManagedFieldsEntry, bool) {
	out := make([]metav1.ManagedFieldsEntry, 0, len(managedFields)+len(b.entries)-1)
	found := false
	for _, e := range managedFields {
		if e.Manager == placeholderManager {
			if found || e.FieldsV1 == nil || !bytes.Equal(e.FieldsV1.Raw, placeholder) {
				return nil, false
			}
			found = true
			continue
		}
		out = append(out, e)
	}
	if !found {
		return nil, false
	}
	out = append(out, b.entries...)
	sortEntries(out)
	return out, true
}
