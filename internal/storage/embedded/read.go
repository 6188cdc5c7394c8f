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

// Get implements storage.Store.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	var (
		m     keyMeta
		found bool
		kv    storage.KeyValue
	)
	_, err := s.readSnapshot(ctx, func() { m, found = s.index.get(key) }, func(snap *pebble.Snapshot) error {
		if !found {
			return fmt.Errorf("embedded: get %q: %w", key, storage.ErrNotFound)
		}
		var err error
		kv, err = readValue(snap, key, m.mod, m.create)
		return err
	})
	if err != nil {
		return storage.KeyValue{}, err
	}
	return kv, nil
}

// List implements storage.Store. It finds the prefix's keys in the key
// index, then reads their values from history in revision order: the order
// history was written in, and so the order it lies on disk.
func (s *Store) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	var out []storage.KeyValue
	rev, err := s.readSnapshot(ctx, func() { out = s.index.list(prefix) }, func(snap *pebble.Snapshot) error {
		if err := fillValues(ctx, snap, out); err != nil {
			return fmt.Errorf("embedded: list %q: %w", prefix, err)
		}
		sortByKey(out)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, rev, nil
}

// readSnapshot calls find with the key index read-locked and takes a Pebble
// snapshot at the same instant, then reads values with f from the snapshot.
// The snapshot holds every value the index names: the writer changes the
// index only after applying the batch that made the change, and compaction
// deletes a value only once a write at or below the acknowledged revision
// has replaced it, which the index then shows. It returns the index's
// revision, once that is durable (awaitDurable): the index may show the
// writer's in-flight batch, and a reader must not see a write a crash could
// still undo, whatever f found, a missing key included.
func (s *Store) readSnapshot(ctx context.Context, find func(), f func(snap *pebble.Snapshot) error) (int64, error) {
	var rev int64
	err := s.read(ctx, func() error {
		s.index.mu.RLock()
		rev = s.index.rev
		find()
		snap := s.db.NewSnapshot()
		s.index.mu.RUnlock()
		defer snap.Close()
		return f(snap)
	})
	if werr := s.awaitDurable(ctx, rev); werr != nil {
		return rev, werr
	}
	return rev, err
}

// scanRecords calls f for every record in [lower, upper).
func scanRecords(r pebble.Reader, lower, upper []byte, f func(dbKey, rec []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("reading %q: %w", it.Key(), err)
		}
		if err := f(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
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
	ev, err := decodeHistoryFor(hk, rec, key)
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("embedded: value of %q: %w", key, err)
	}
	if ev.Key != key || ev.Type != storage.EventPut || ev.CreateRevision != create {
		return storage.KeyValue{}, fmt.Errorf("embedded: key %q is at revision %d (created at %d), but the history record there is a %s of %q created at %d: %w",
			key, ev.Revision, create, ev.Type, ev.Key, ev.CreateRevision, storage.ErrCorrupt)
	}
	return storage.KeyValue{Key: key, Value: ev.Value, ModRevision: ev.Revision, CreateRevision: create}, nil
}

// readPrevValue sets ev.PrevValue from the history record at
// ev.PrevModRevision, which ev's history record names.
func readPrevValue(r pebble.Reader, ev *storage.Event) error {
	prev, err := readValue(r, ev.Key, ev.PrevModRevision, ev.CreateRevision)
	if err != nil {
		return fmt.Errorf("embedded: previous value of the event at revision %d: %w", ev.Revision, err)
	}
	ev.PrevValue = prev.Value
	return nil
}
