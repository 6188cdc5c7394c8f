package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// Versions over one storage.
//
// A resource served in several versions is stored once, in its storage
// version, and converted on the way in and out, as upstream does. A
// Resource whose StorageVersion is set is such a served version: its
// objects are kept under the storage version's StorageKeyPrefix, encoded as
// the storage version's Kind, and the API server converts between the two
// through the scheme, where every pair's conversions are registered
// (addConversions). Registering them in the scheme rather than calling them
// directly lets everything that converts through a scheme reuse them: the
// field managers convert managedFields written through another version.
//
// Myriad has no internal types: each pair converts directly between two
// versioned types, and a field one version cannot express round-trips
// through the annotations upstream uses for it, so that reading an object
// in one version and writing it back never loses what the other wrote.

// conversionPair registers the two directions between versioned types A
// and B.
type conversionPair struct {
	register func(*runtime.Scheme) error
}

// pair builds a conversionPair from typed functions. The functions fill
// out from in; they must not modify in (it may be a cached object) nor
// alias its maps or slices into out where they then change them.
func pair[A, B any](aToB func(in *A, out *B) error, bToA func(in *B, out *A) error) conversionPair {
	return conversionPair{register: func(s *runtime.Scheme) error {
		if err := s.AddConversionFunc((*A)(nil), (*B)(nil), func(a, b interface{}, _ conversion.Scope) error {
			return aToB(a.(*A), b.(*B))
		}); err != nil {
			return err
		}
		return s.AddConversionFunc((*B)(nil), (*A)(nil), func(b, a interface{}, _ conversion.Scope) error {
			return bToA(b.(*B), a.(*A))
		})
	}}
}

// conversions lists every pair of versions served over one storage.
func conversions() []conversionPair {
	return []conversionPair{
		pair(coreEventToEventsV1, eventsV1ToCoreEvent),
		pair(hpaV2ToV1, hpaV1ToV2),
	}
}

// addConversions registers every pair's conversions in s.
func addConversions(s *runtime.Scheme) error {
	for _, p := range conversions() {
		if err := p.register(s); err != nil {
			return fmt.Errorf("registering conversions: %w", err)
		}
	}
	return nil
}

// checkStorageVersions catches a served version whose storage version is
// not served, or that shares its storage without a conversion.
func checkStorageVersions(reg *Registry, s *runtime.Scheme) error {
	for _, r := range reg.resources {
		if r.StorageVersion.Empty() {
			continue
		}
		st, ok := reg.Lookup(r.StorageVersion.WithResource(r.Resource))
		if !ok {
			return fmt.Errorf("registry: %v: storage version %v is not served", r.GroupVersionResource(), r.StorageVersion)
		}
		if !st.StorageVersion.Empty() {
			return fmt.Errorf("registry: %v: storage version %v is itself converted", r.GroupVersionResource(), r.StorageVersion)
		}
		if st.StorageKeyPrefix != r.StorageKeyPrefix {
			return fmt.Errorf("registry: %v: stored under %q, its storage version under %q", r.GroupVersionResource(), r.StorageKeyPrefix, st.StorageKeyPrefix)
		}
		if err := s.Convert(r.New(), st.New(), nil); err != nil {
			return fmt.Errorf("registry: %v: no conversion to its storage version: %w", r.GroupVersionResource(), err)
		}
		if err := s.Convert(st.New(), r.New(), nil); err != nil {
			return fmt.Errorf("registry: %v: no conversion from its storage version: %w", r.GroupVersionResource(), err)
		}
	}
	return nil
}

// StorageResource returns the resource whose version r's objects are
// stored in: r itself unless r.StorageVersion is set.
func (g *Registry) StorageResource(r *Resource) *Resource {
	if r.StorageVersion.Empty() {
		return r
	}
	st, _ := g.Lookup(r.StorageVersion.WithResource(r.Resource))
	return st
}
