// Package storebench measures a storage.Store the way the API server uses
// it: many concurrent durable writes of object-sized values, point reads, and
// (capacity mode) the same after preloading a large number of objects,
// including how long the store takes to reopen. `myriad bench store` calls
// Run; the embedded package's Go benchmarks call it too.
package storebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
)

// Config says what to measure. Zero fields take the stated defaults.
type Config struct {
	// Dir holds the embedded store. Default: a new temporary directory,
	// removed when Run returns. An existing store in Dir is reused (its
	// objects count as already loaded).
	Dir string
	// Store, if set, is measured instead of an embedded store in Dir; Run
	// does not close it and skips the reopen measurement.
	Store storage.Store
	// StoreOptions tune the embedded store (Dir is overridden).
	StoreOptions embedded.Options

	// Writers is the number of goroutines writing concurrently. Default 64.
	Writers int
	// ObjectSize is the value size in bytes. Default 1024.
	ObjectSize int
	// Count is the number of measured writes (creates of new keys, or
	// updates with Updates). Default 10,000.
	Count int
	// Updates makes the measured writes compare-and-swap updates of
	// existing objects, picked at random, instead of creates: the store
	// keeps its size however long the run, as a cluster at steady state
	// does (heartbeats, status writes). Each writer owns every Writers-th
	// object, so writers do not conflict, and updates from copies it read
	// before the timed writes, as the API server updates from its cache.
	Updates bool
	// UpdateSet, with Updates, draws the updated objects from the first
	// UpdateSet objects only (0: from all of them). Comparing stores of
	// different sizes under the same writes takes the same set at both:
	// drawn from all of a million objects, most updates replace a write
	// from the preload; from all of 10,000, one from the run.
	UpdateSet int
	// Values is what the objects hold: "random" (default) incompressible
	// bytes of ObjectSize, the worst case for the store's I/O, or "pods":
	// Pods of about 1.5 KB (benchutil.StoredPod, whatever ObjectSize says)
	// encoded as the API server stores them, as compressible as real ones.
	Values string
	// Rate, if positive, paces the measured writes at this many per second
	// (open loop: write i is due at start + i/Rate, from a pool of Writers
	// goroutines) and measures each from its due time, so a store that
	// falls behind shows it in latency. This compares latency at one load,
	// whatever the store's size; without Rate the writers write as fast as
	// the store allows and latency follows throughput. Default 0.
	Rate float64
	// Preload is the number of objects written before measuring (capacity
	// mode), with PreloadWriters writers. Default 0 and 256.
	Preload        int
	PreloadWriters int
	// Reads is the number of measured Gets of random existing keys after the
	// writes, from Writers goroutines. Default 10,000; negative skips them.
	Reads int
	// KeepHistory, if positive, compacts the store's history every
	// CompactEvery during the run down to the newest KeepHistory
	// revisions, as the API server does periodically in production.
	// Default 0: never compact, the worst case for an LSM (every write's
	// value is kept).
	KeepHistory int
	// CompactEvery is how often KeepHistory compacts. Default 1 s; the API
	// server compacts every five minutes.
	CompactEvery time.Duration
	// Reopen closes the embedded store after the run and measures how long
	// opening it again takes.
	Reopen bool
	// ListAll, with Reopen, then times one List of every object in the
	// reopened store, which is what the API server's caches read at start.
	ListAll bool
	// Progress, if set, receives a line every few seconds during long phases.
	Progress io.Writer
}

// Result holds the measurements. Latencies are per call, as the caller of
// the store sees them.
type Result struct {
	Writes       int
	Updates      bool // the writes were updates of existing objects
	UpdateSet    int  // with Config.UpdateSet: ~how many objects the updates were drawn from
	WriteTime    time.Duration
	WritesPerSec float64
	WriteP50     time.Duration
	WriteP99     time.Duration
	WriteP999    time.Duration
	WriteMax     time.Duration

	Preloaded     int
	PreloadTime   time.Duration
	PreloadPerSec float64
	// ObjectsAtMeasure approximates the objects in the store when measuring
	// started: before creates, the store's revision (exact for a store only
	// this bench's creates wrote); before updates, the objects found in a
	// random sample of the numbers below it, scaled up (revisions spent on
	// earlier updates created nothing).
	ObjectsAtMeasure int

	Reads       int
	ReadsPerSec float64
	ReadP50     time.Duration
	ReadP99     time.Duration

	ReopenTime  time.Duration // 0 unless Config.Reopen
	ListTime    time.Duration // 0 unless Config.ListAll
	ListObjects int
	DiskBytes   int64 // size of Dir after the run; 0 for Config.Store
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Writers, 64)
	def(&c.ObjectSize, 1024)
	def(&c.Count, 10000)
	def(&c.PreloadWriters, 256)
	def(&c.Reads, 10000)
	return c
}

// Run performs the benchmark described by cfg: preload, measured writes,
// measured reads, then (optionally) close and timed reopen.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Writers < 1 || cfg.PreloadWriters < 1 || cfg.ObjectSize < 0 || cfg.Count < 0 || cfg.Preload < 0 {
		return Result{}, fmt.Errorf("storebench: invalid config: %d writers, %d preload writers, %d-byte objects, count %d, preload %d",
			cfg.Writers, cfg.PreloadWriters, cfg.ObjectSize, cfg.Count, cfg.Preload)
	}
	if cfg.Store != nil {
		return measure(ctx, cfg, cfg.Store)
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "storebench-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	opts := cfg.StoreOptions
	opts.Dir = cfg.Dir
	s, err := embedded.Open(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	res, err := measure(ctx, cfg, s)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	if cfg.Reopen {
		start := time.Now()
		s, err := embedded.Open(ctx, opts)
		if err != nil {
			return res, fmt.Errorf("storebench: reopen: %w", err)
		}
		// The store serves once Open returns; a read proves it.
		if _, err := s.CurrentRevision(ctx); err != nil {
			s.Close()
			return res, err
		}
		res.ReopenTime = time.Since(start)
		if cfg.ListAll {
			start := time.Now()
			kvs, _, err := s.List(ctx, "/")
			if err != nil {
				s.Close()
				return res, fmt.Errorf("storebench: list after reopen: %w", err)
			}
			res.ListTime, res.ListObjects = time.Since(start), len(kvs)
		}
		if err := s.Close(); err != nil {
			return res, err
		}
	}
	res.DiskBytes, err = benchutil.DirSize(cfg.Dir)
	return res, err
}

func measure(ctx context.Context, cfg Config, s storage.Store) (res Result, err error) {
	if cfg.KeepHistory > 0 {
		every := cfg.CompactEvery
		if every <= 0 {
			every = time.Second
		}
		stop := compactLoop(ctx, s, int64(cfg.KeepHistory), every)
		defer func() {
			if serr := stop(); err == nil {
				err = serr
			}
		}()
	}
	// Key indexes start at the current revision: every object an earlier
	// run created consumed a revision, so a reused Dir grows instead of
	// colliding (without listing what may be millions of objects).
	existing, err := s.CurrentRevision(ctx)
	if err != nil {
		return res, err
	}
	next := atomic.Int64{}
	next.Store(existing)
	values, err := newValues(cfg.Values, cfg.ObjectSize)
	if err != nil {
		return res, err
	}
	if cfg.Preload > 0 {
		start := time.Now()
		if _, err := writeN(ctx, cfg.Preload, cfg.PreloadWriters, creates(s, &next, values), cfg.Progress, "preload", 0); err != nil {
			return res, fmt.Errorf("storebench: preload: %w", err)
		}
		res.Preloaded = cfg.Preload
		res.PreloadTime = time.Since(start)
		res.PreloadPerSec = float64(cfg.Preload) / res.PreloadTime.Seconds()
	}
	res.ObjectsAtMeasure = int(next.Load())
	prepare := creates(s, &next, values)
	if cfg.Updates {
		set := res.ObjectsAtMeasure
		if cfg.UpdateSet > 0 && cfg.UpdateSet < set {
			set = cfg.UpdateSet
		}
		var found int
		if prepare, found, err = updates(ctx, s, set, cfg.Writers, cfg.Count, values); err != nil {
			return res, err
		}
		if set == res.ObjectsAtMeasure {
			res.ObjectsAtMeasure = found
		} else {
			res.UpdateSet = found
		}
	}
	// The setup's garbage (a preload, or the values read to pick objects
	// to update: ~1 GB at a million objects) is collected now rather than
	// in the first measured second, whose p99 it made 14 ms at 1M objects.
	runtime.GC()
	start := time.Now()
	lat, err := writeN(ctx, cfg.Count, cfg.Writers, prepare, cfg.Progress, "write", cfg.Rate)
	if err != nil {
		return res, fmt.Errorf("storebench: writes: %w", err)
	}
	res.WriteTime = time.Since(start)
	res.Writes, res.Updates = cfg.Count, cfg.Updates
	if cfg.Count > 0 {
		res.WritesPerSec = float64(cfg.Count) / res.WriteTime.Seconds()
		res.WriteP50, res.WriteP99, res.WriteP999, res.WriteMax = percentiles(lat)
	}
	if n := int(next.Load()); cfg.Reads > 0 && n > 0 {
		start := time.Now()
		lat, err := readN(ctx, s, cfg.Reads, cfg.Writers, n)
		if err != nil {
			return res, fmt.Errorf("storebench: reads: %w", err)
		}
		res.Reads = cfg.Reads
		res.ReadsPerSec = float64(cfg.Reads) / time.Since(start).Seconds()
		res.ReadP50, res.ReadP99, _, _ = percentiles(lat)
	}
	return res, nil
}

// Key returns the key of the i-th benchmark object. Names are spread over
// namespaces and hashed, like real pod names, rather than sequential.
func Key(i int) string {
	h := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	return fmt.Sprintf("/registry/pods/ns-%03d/pod-%016x-%d", i%100, h, i)
}

// writeN performs n writes from w goroutines and returns each write's
// latency: as fast as they go, or with rate > 0 write i at i/rate seconds
// from the start, its latency counted from then (or from when it was
// ready, if preparing it took longer).
func writeN(ctx context.Context, n, w int, prepare prepareFunc, progress io.Writer, phase string, rate float64) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		errOnce  sync.Once
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := benchutil.ReportProgress(progress, phase, n, &done)
	defer stopProgress()
	t0 := time.Now()
	for worker := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				slot := int(done.Add(1)) - 1
				if slot >= n || ctx.Err() != nil {
					return
				}
				write, err := prepare(ctx, worker, slot)
				start := time.Now()
				if err == nil && rate > 0 {
					if due := t0.Add(time.Duration(float64(slot) / rate * float64(time.Second))); due.After(start) {
						time.Sleep(time.Until(due))
						start = due
					}
				}
				if err == nil {
					err = write()
				}
				lat[slot] = time.Since(start)
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return lat, ctx.Err()
}

// readN performs n Gets of random keys among the first objects from w
// goroutines.
func readN(ctx context.Context, s storage.Store, n, w, objects int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	var (
		done atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, w)
	)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				slot := int(done.Add(1)) - 1
				if slot >= n || ctx.Err() != nil {
					return
				}
				key := Key(rand.IntN(objects))
				start := time.Now()
				_, err := s.Get(ctx, key)
				lat[slot] = time.Since(start)
				if err != nil && !errors.Is(err, storage.ErrNotFound) {
					errs <- fmt.Errorf("get %q: %w", key, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return lat, ctx.Err()
}

func percentiles(lat []time.Duration) (p50, p99, p999, maxLat time.Duration) {
	if len(lat) == 0 {
		return 0, 0, 0, 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return benchutil.Quantile(s, 0.50), benchutil.Quantile(s, 0.99), benchutil.Quantile(s, 0.999), s[len(s)-1]
}

// compactLoop compacts s every interval, keeping keep revisions of
// history, until the returned stop is called; stop reports the first
// failure.
func compactLoop(ctx context.Context, s storage.Store, keep int64, every time.Duration) (stop func() error) {
	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				done <- nil
				return
			case <-t.C:
				rev, err := s.CurrentRevision(ctx)
				if err == nil && rev > keep {
					err = s.Compact(ctx, rev-keep)
				}
				if err != nil {
					done <- fmt.Errorf("storebench: compact: %w", err)
					return
				}
			}
		}
	}()
	return func() error {
		close(quit)
		return <-done
	}
}
