package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// ListOptions mirror metav1.ListOptions for a list.
type ListOptions struct {
	// ResourceVersion "" is a consistent read (waits for rv@t0); "0" is
	// whatever the cache has; "N" waits until the cache has N
	// (NotOlderThan), or with ResourceVersionMatch Exact is the list as of
	// N (410 Expired when N has left the window).
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	Namespace            string
	Label                labels.Selector
	Field                fields.Selector
	// Limit > 0 pages the list; Continue resumes it, as of the first
	// page's revision (ResourceVersion must then be empty).
	Limit    int64
	Continue string
}

// ListResult is the list metadata of a list whose items went to emit.
type ListResult struct {
	// ResourceVersion is the revision the list reflects.
	ResourceVersion string
	// Continue is set when Limit cut the list short.
	Continue string
	// RemainingItemCount is set on a cut-short list without label or
	// field selector when at most 10,000 items follow: how many.
	RemainingItemCount *int64
}

// maxRemainingCount bounds the walk that computes RemainingItemCount.
const maxRemainingCount = 10_000

// Get returns the object under key (see Key) as of a read with resource
// version rv ("" consistent, "0" any, "N" not older than N), or
// ErrNotFound. With Config.RetainObjects the object is shared: do not
// modify it.
func (c *Cache) Get(ctx context.Context, key, rv string) (runtime.Object, error) {
	if err := c.waitReadyBounded(ctx); err != nil {
		return nil, err
	}
	if err := c.waitForOpts(ctx, rv); err != nil {
		return nil, err
	}
	c.mu.RLock()
	e := c.mu.st.get(key)
	c.mu.RUnlock()
	if e == nil {
		return nil, ErrNotFound
	}
	return c.object(e)
}

// List streams the objects selected by opts, in key (namespace, name)
// order, to emit, and returns the list's metadata. An error from emit
// stops the list and is returned as is. With Config.RetainObjects emitted
// objects are shared: do not modify them. Cost: O(matching objects) when the selector requires an
// exact value of an indexed field or label, or O(namespace) for a
// namespace, plus O(window events since the revision) for an older
// revision (Exact, continue).
func (c *Cache) List(ctx context.Context, opts ListOptions, emit func(runtime.Object) error) (ListResult, error) {
	return c.list(ctx, opts, func(e *entry) error {
		obj, err := c.object(e)
		if err != nil {
			return err
		}
		return emit(obj)
	})
}

// KeepsStoredBytes reports whether ListStored is available: the cache keeps
// each object's stored bytes (the default), not decoded objects.
func (c *Cache) KeepsStoredBytes() bool { return !c.cfg.RetainObjects }

// GetStored is the stored bytes and revisions of key as the cache holds it
// now, without waiting for anything: ok is false when the cache is not
// ready, does not have the key, holds an undecodable value or keeps decoded
// objects (KeepsStoredBytes false). The bytes are shared (never modify
// them) unless the cache keeps values compressed.
// Writers use it to skip a store read before a compare-and-swap; if the
// cache was behind, the compare-and-swap fails and they read the store.
func (c *Cache) GetStored(key string) (kv storage.KeyValue, ok bool) {
	if c.cfg.RetainObjects || !c.Ready() {
		return storage.KeyValue{}, false
	}
	c.mu.RLock()
	e := c.mu.st.get(key)
	c.mu.RUnlock()
	if e == nil || undecodableErr(e) != nil {
		return storage.KeyValue{}, false
	}
	kv, err := c.keyValue(e)
	return kv, err == nil
}

// KeyRevision is the ModRevision of key's object as the cache holds it now,
// without decoding it: what a caller that keeps its own decoded copy of a
// hot object (the namespace every pod create is admitted against)
// compares to know that copy is current. ok is false when the cache is
// not ready or does not hold key.
func (c *Cache) KeyRevision(key string) (rev int64, ok bool) {
	if !c.Ready() {
		return 0, false
	}
	c.mu.RLock()
	e := c.mu.st.get(key)
	c.mu.RUnlock()
	if e == nil || undecodableErr(e) != nil {
		return 0, false
	}
	return e.rev, true
}

// HasNamespace reports whether the cache holds an object in namespace ns
// now, without waiting and in O(log n): the check an admission plugin
// makes on every write to skip namespaces without its policy objects
// (ResourceQuotas, LimitRanges). ok is false when the cache is not ready;
// the caller then lists, which waits for it.
func (c *Cache) HasNamespace(ns string) (has, ok bool) {
	if !c.Ready() {
		return false, false
	}
	pivot := pivots.Get().(*entry)
	pivot.key = c.cfg.Prefix + ns + "/"
	c.mu.RLock()
	c.mu.st.all.AscendGreaterOrEqual(pivot, func(e *entry) bool {
		has = strings.HasPrefix(e.key, pivot.key)
		return false
	})
	c.mu.RUnlock()
	pivot.key = ""
	pivots.Put(pivot)
	return has, true
}

// pivots are the search keys of HasNamespace: an entry is large enough
// that allocating one per call was most of its cost.
var pivots = sync.Pool{New: func() any { return new(entry) }}

// ListStored is List without decoding: emit gets each selected object as
// the cache keeps it (Stored: its stored bytes, maybe compressed, with its
// revisions), so a server can pass them to clients that speak the storage
// encoding without a decode and re-encode per object. A Stored stays valid
// after emit returns. It fails when KeepsStoredBytes is false.
func (c *Cache) ListStored(ctx context.Context, opts ListOptions, emit func(Stored) error) (ListResult, error) {
	if c.cfg.RetainObjects {
		return ListResult{}, internalError(fmt.Errorf("ListStored on a cache that retains decoded objects"))
	}
	return c.list(ctx, opts, func(e *entry) error {
		if err := undecodableErr(e); err != nil {
			return err
		}
		return emit(c.stored(e))
	})
}

func (c *Cache) list(ctx context.Context, opts ListOptions, visit func(*entry) error) (ListResult, error) {
	if err := c.waitReadyBounded(ctx); err != nil {
		return ListResult{}, err
	}
	pred := newPredicate(opts.Namespace, opts.Label, opts.Field)
	var asOf int64
	start := ""
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" {
			return ListResult{}, errBadRequest("specifying resource version is not allowed when using continue")
		}
		var err error
		start, asOf, err = decodeContinue(opts.Continue, c.cfg.Prefix)
		if err != nil {
			return ListResult{}, err
		}
		if asOf == latestContinueRV {
			// The rest of a list whose revision was compacted away, as
			// of now: a consistent read, then pages at its revision.
			asOf = 0
			if err := c.waitForOpts(ctx, ""); err != nil {
				return ListResult{}, err
			}
		} else {
			// Upstream's token dies with its revision's history: once
			// the store compacted past it, the rest of that list cannot
			// be read consistently there, and clients (the conformance
			// suite among them) expect the 410 even though this cache
			// may still hold the revision in its window.
			if compacted, err := c.cfg.Store.CompactedRevision(ctx); err == nil && asOf <= compacted {
				return ListResult{}, errContinueExpired(encodeContinue(start, c.cfg.Prefix, latestContinueRV))
			}
			if err := c.waitForClientRev(ctx, asOf); err != nil {
				return ListResult{}, err
			}
		}
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
			return ListResult{}, errBadRequest("resourceVersionMatch %q requires a non-zero resourceVersion", opts.ResourceVersionMatch)
		}
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			return ListResult{}, err
		}
		if err := c.waitForClientRev(ctx, rv); err != nil {
			return ListResult{}, err
		}
		asOf = rv
	case opts.ResourceVersionMatch != "" && opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan:
		return ListResult{}, errBadRequest("unknown resourceVersionMatch %q", opts.ResourceVersionMatch)
	default:
		if err := c.waitForOpts(ctx, opts.ResourceVersion); err != nil {
			return ListResult{}, err
		}
	}

	c.mu.RLock()
	snap, err := c.snapshotLocked(&pred, asOf)
	c.mu.RUnlock()
	if err != nil {
		if opts.Continue != "" {
			return ListResult{}, errContinueExpired(encodeContinue(start, c.cfg.Prefix, latestContinueRV))
		}
		return ListResult{}, err
	}

	// Counting what follows a page is a walk over pointers; with a
	// selector it would mean matching, so (like upstream) it is only done
	// without one, and only up to maxRemainingCount: paging through 200k
	// objects 500 at a time would otherwise walk 40M entries to count.
	countRest := pred.selectorsEmpty()
	var (
		n, remaining int64
		last         *entry
		more         bool
		emitErr      error
	)
	snap.ascend(start, func(e *entry) bool {
		if !pred.matches(e) {
			return true
		}
		if opts.Limit > 0 && n >= opts.Limit {
			more = true
			remaining++
			if remaining > maxRemainingCount {
				countRest = false
			}
			return countRest
		}
		if err := visit(e); err != nil {
			emitErr = err
			return false
		}
		n++
		last = e
		return true
	})
	if emitErr != nil {
		return ListResult{}, emitErr
	}
	res := ListResult{ResourceVersion: formatRV(snap.rev)}
	if more {
		res.Continue = encodeContinue(last.key+"\x00", c.cfg.Prefix, snap.rev)
		if countRest {
			res.RemainingItemCount = &remaining
		}
	}
	return res, nil
}
