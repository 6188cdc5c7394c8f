package embedded

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Get implements storage.Store. It reads a Pebble snapshot, which holds
// every acknowledged write because the writer acknowledges only after the
// commit; see awaitDurable for writes still in flight.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	var (
		kv      storage.KeyValue
		snapRev int64
	)
	err := s.read(ctx, func() error {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		var err error
		if snapRev, err = readMeta(snap, metaCurrentKey); err != nil {
			return err
		}
		var found bool
		kv, found, err = readCurrent(snap, key)
		if err == nil && !found {
			err = fmt.Errorf("embedded: get %q: %w", key, storage.ErrNotFound)
		}
		return err
	})
	if werr := s.awaitDurable(ctx, snapRev); werr != nil {
		return storage.KeyValue{}, werr
	}
	return kv, err
}

// List implements storage.Store. The returned revision is read from the same
// Pebble snapshot as the values (the writer stores it in every batch), so the
// pair is exactly consistent.
//
// It reads the prefix's index records in key order, then their values from
// history in revision order: the order history was written in, and so the
// order it lies on disk.
func (s *Store) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	var (
		out []storage.KeyValue
		rev int64
	)
	err := s.read(ctx, func() error {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		var err error
		if rev, err = readMeta(snap, metaCurrentKey); err != nil {
			return err
		}
		if out, err = listIndex(ctx, snap, prefix); err != nil {
			return err
		}
		return fillValues(ctx, snap, out)
	})
	if err == nil {
		err = s.awaitDurable(ctx, rev)
	}
	if err != nil {
		return nil, 0, err
	}
	return out, rev, nil
}

// listIndex returns the key, ModRevision and CreateRevision of every key
// with prefix, in key order.
func listIndex(ctx context.Context, r pebble.Reader, prefix string) ([]storage.KeyValue, error) {
	var out []storage.KeyValue
	lower, upper := prefixBounds(indexPrefix, prefix)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("embedded: list %q: %w", prefix, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if len(out)%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("embedded: list %q at key %q: %w", prefix, it.Key()[1:], err)
		}
		kv, err := decodeIndex(string(it.Key()[1:]), it.Key(), v)
		if err != nil {
			return nil, err
		}
		out = append(out, kv)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: list %q: %w", prefix, err)
	}
	return out, nil
}

// fillValues reads the value of every kvs[i] (key and revisions known) from
// history, in revision order.
func fillValues(ctx context.Context, r pebble.Reader, kvs []storage.KeyValue) error {
	if len(kvs) == 0 {
		return nil
	}
	order := make([]int32, len(kvs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Compare(kvs[a].ModRevision, kvs[b].ModRevision)
	})
	it, err := r.NewIter(&pebble.IterOptions{
		LowerBound: historyKey(kvs[order[0]].ModRevision),
		UpperBound: historyKey(kvs[order[len(order)-1]].ModRevision + 1),
	})
	if err != nil {
		return fmt.Errorf("embedded: reading values: %w", err)
	}
	defer it.Close()
	for n, i := range order {
		if n%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		kv := &kvs[i]
		hk := historyKey(kv.ModRevision)
		if !it.SeekGE(hk) || !bytes.Equal(it.Key(), hk) {
			if err := it.Error(); err != nil {
				return fmt.Errorf("embedded: reading %q at revision %d: %w", kv.Key, kv.ModRevision, err)
			}
			return missingHistory(kv.Key, kv.ModRevision)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("embedded: reading %q at revision %d: %w", kv.Key, kv.ModRevision, err)
		}
		if *kv, err = decodeCurrent(kv.Key, hk, v, kv.CreateRevision); err != nil {
			return err
		}
	}
	return nil
}

// readCurrent reads key's current version through r: its index record, then
// the history record at the revision the index names.
func readCurrent(r pebble.Reader, key string) (storage.KeyValue, bool, error) {
	ik := indexKey(key)
	v, closer, err := r.Get(ik)
	if errors.Is(err, pebble.ErrNotFound) {
		return storage.KeyValue{}, false, nil
	}
	if err != nil {
		return storage.KeyValue{}, false, fmt.Errorf("embedded: reading %q: %w", key, err)
	}
	kv, err := decodeIndex(key, ik, v)
	closer.Close()
	if err == nil {
		kv, err = readValue(r, key, kv.ModRevision, kv.CreateRevision)
	}
	return kv, err == nil, err
}

// readValue reads key's write at revision mod from history.
func readValue(r pebble.Reader, key string, mod, create int64) (storage.KeyValue, error) {
	hk := historyKey(mod)
	v, closer, err := r.Get(hk)
	if errors.Is(err, pebble.ErrNotFound) {
		return storage.KeyValue{}, missingHistory(key, mod)
	}
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("embedded: reading %q at revision %d: %w", key, mod, err)
	}
	defer closer.Close()
	return decodeCurrent(key, hk, v, create)
}

func missingHistory(key string, mod int64) error {
	return fmt.Errorf("embedded: key %q is at revision %d but its history record is missing: %w", key, mod, storage.ErrCorrupt)
}

// decodeCurrent decodes rec, the history record at hk, as key's current
// version, created at revision create.
func decodeCurrent(key string, hk, rec []byte, create int64) (storage.KeyValue, error) {
	ev, _, err := decodeHistoryFor(hk, rec, key)
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("embedded: value of %q: %w", key, err)
	}
	if ev.Key != key || ev.Type != storage.EventPut || ev.CreateRevision != create {
		return storage.KeyValue{}, fmt.Errorf("embedded: key %q is at revision %d (created at %d), but the history record there is a %s of %q created at %d: %w",
			key, ev.Revision, create, ev.Type, ev.Key, ev.CreateRevision, storage.ErrCorrupt)
	}
	return storage.KeyValue{Key: key, Value: ev.Value, ModRevision: ev.Revision, CreateRevision: create}, nil
}

// readPrevValue sets ev.PrevValue, which its history record names by
// revision (decodeHistory's prevByRev), from the history record there.
func readPrevValue(r pebble.Reader, ev *storage.Event) error {
	prev, err := readValue(r, ev.Key, ev.PrevModRevision, ev.CreateRevision)
	if err != nil {
		return fmt.Errorf("embedded: previous value of the event at revision %d: %w", ev.Revision, err)
	}
	ev.PrevValue = prev.Value
	return nil
}
