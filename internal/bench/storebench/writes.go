package storebench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// prepareFunc readies the write of one slot for the writer goroutine
// worker (of w): it returns the call to time.
type prepareFunc func(ctx context.Context, worker, slot int) (func() error, error)

// creates returns a prepareFunc that creates new objects, numbered from
// next.
func creates(s storage.Store, next *atomic.Int64, values func(int) []byte) prepareFunc {
	return func(ctx context.Context, _, _ int) (func() error, error) {
		i := int(next.Add(1)) - 1
		key, value := Key(i), values(i)
		return func() error {
			if _, err := s.Create(ctx, key, value); err != nil {
				return fmt.Errorf("create %q: %w", key, err)
			}
			return nil
		}, nil
	}
}

// updaterFrom is a store that takes the value an update replaces from the
// caller (the embedded store): the API server passes its watch cache's
// copy, and so do these updates.
type updaterFrom interface {
	UpdateFrom(ctx context.Context, key string, value []byte, prev storage.KeyValue) (int64, error)
}

// updates returns a prepareFunc that updates random existing objects among
// the first objects. Worker g of w updates only objects whose number is g
// modulo w, so writers never conflict. The API server updates from its
// watch cache's copy and never reads the store for it, so neither do the
// measured updates: each worker reads a random sample of its objects
// (pool) before the writes start and then updates from what it knows.
// (A Get per update would cost the 1M-object store a page-cache read that
// the 10k store serves from its block cache.) Object i always holds
// values(i), so the pool keeps only revisions, not values, and costs the
// 1M run no more heap than the 10k run beyond ~40 bytes per object; an
// object holding something else (a Dir written with other values) keeps
// its value until updated. A number whose object is missing (its revision
// went to a write that was not a create) is left out.
//
// objects is the number of object numbers (the store's revision: numbers
// that became objects and revisions spent on updates alike); found
// estimates how many are objects, from the share of the sample that was.
func updates(ctx context.Context, s storage.Store, objects, w, count int, values func(int) []byte) (prepare prepareFunc, found int, err error) {
	if objects < w {
		return nil, 0, fmt.Errorf("storebench: %d objects cannot be shared by %d writers", objects, w)
	}
	type object struct {
		number      int
		mod, create int64
		other       []byte // the stored value, if not values(number)
	}
	// Twice a worker's share of the writes, drawn without repeats, so
	// most updates hit an object not updated yet in this run, as the
	// heartbeats of many nodes do.
	share := objects / w
	pool := min(share, 2*(count/w+1))
	pools := make([][]object, w)
	g, gctx := errgroup.WithContext(ctx)
	for worker := range w {
		g.Go(func() error {
			for _, j := range rand.Perm(share)[:pool] {
				i := j*w + worker
				kv, err := s.Get(gctx, Key(i))
				if errors.Is(err, storage.ErrNotFound) {
					continue
				}
				if err != nil {
					return fmt.Errorf("get %q: %w", Key(i), err)
				}
				o := object{number: i, mod: kv.ModRevision, create: kv.CreateRevision}
				if !bytes.Equal(kv.Value, values(i)) {
					o.other = kv.Value
				}
				pools[worker] = append(pools[worker], o)
			}
			if len(pools[worker]) == 0 {
				return fmt.Errorf("no object found for writer %d among %d to update", worker, objects)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, fmt.Errorf("storebench: reading the objects to update: %w", err)
	}
	for _, own := range pools {
		found += len(own)
	}
	found = found * share / pool // each worker sampled pool of its share numbers
	return func(ctx context.Context, worker, _ int) (func() error, error) {
		own := pools[worker]
		o := &own[rand.IntN(len(own))]
		key, value := Key(o.number), values(o.number)
		prev := storage.KeyValue{Key: key, Value: value, ModRevision: o.mod, CreateRevision: o.create}
		if o.other != nil {
			prev.Value = o.other
		}
		return func() error {
			var (
				rev int64
				err error
			)
			if u, ok := s.(updaterFrom); ok {
				rev, err = u.UpdateFrom(ctx, key, value, prev)
			} else {
				rev, err = s.Update(ctx, key, value, prev.ModRevision)
			}
			if err != nil {
				return fmt.Errorf("update %q at revision %d: %w", key, prev.ModRevision, err)
			}
			o.mod, o.other = rev, nil
			return nil
		}, nil
	}, found, nil
}
