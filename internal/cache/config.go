package cache

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Config configures one Cache. Zero values take the stated defaults.
type Config struct {
	// Store is the backend mirrored. Required.
	Store storage.Store
	// Prefix is the key prefix of the resource, ending in "/", e.g.
	// "/core/pods/". Keys below it are "<namespace>/<name>" or "<name>".
	// Required.
	Prefix string
	// Resource names the resource in metrics (label "resource").
	Resource schema.GroupResource
	// ClusterScoped says keys are "<name>" (no namespace), so a
	// metadata.name field selector can be answered by one key lookup
	// without a namespace. Optional: when unset such lists scan.
	ClusterScoped bool
	// NewFunc returns an empty object of the type; bookmarks are such an
	// object carrying only metadata.resourceVersion. Required.
	NewFunc func() runtime.Object
	// Decode turns a stored value into an object and must set its
	// metadata.resourceVersion to kv.ModRevision. Required.
	Decode func(kv storage.KeyValue) (runtime.Object, error)
	// DecodeForIndex, if set, decodes a value only as far as Attrs needs
	// (an object without metadata.managedFields, say). The cache decodes
	// every object it is given to index it and, unless RetainObjects,
	// keeps only the stored bytes, so this is most of what a restart and
	// every write cost it. Default Decode.
	DecodeForIndex func(kv storage.KeyValue) (runtime.Object, error)
	// Attrs returns the labels and the selectable fields of obj. The cache
	// keeps them compactly (attrs.go): it answers metadata.name and
	// metadata.namespace from the object's key, and reads a field that is
	// "" as absent, as field selectors do. Default: the object's labels
	// and those two fields.
	Attrs func(obj runtime.Object) (labels.Set, fields.Set)
	// IndexedFields are field-selector keys indexed for lists and watch
	// dispatch, e.g. "spec.nodeName". Default: none.
	IndexedFields []string
	// IndexedLabels are label keys indexed likewise. Default (nil): "app".
	// A non-nil empty slice indexes no label.
	IndexedLabels []string

	// RetainObjects keeps every object decoded in memory: reads and
	// watch fan-out skip decoding, at about 3x the memory (a running pod
	// is ~0.9 KB of protobuf but ~5.5 KB decoded; measured 6.1 KB against
	// 1.9 KB per cached pod, see docs/bench/cache.md). Off by default: the
	// cache keeps the stored bytes and decodes what it serves, which keeps
	// a million-object cluster within a few GiB. Objects handed out are
	// then the caller's own; with RetainObjects they are shared and
	// read-only.
	RetainObjects bool

	// CompressValues keeps each object's stored bytes compressed (S2
	// against a dictionary of the resource's first values, all but the
	// first 128 bytes; value.go): about a sixth of their size for a
	// density pod, at ~1 µs to decompress per object read or listed.
	// Ignored with RetainObjects. At a million objects the stored bytes are
	// most of the cache's memory (docs/bench/cache.md).
	CompressValues bool

	// ImageFile, if set, is where SaveImage writes the cache's state at a
	// clean stop, and where the next start reads it back instead of
	// listing and decoding every object of the store (image.go). It must
	// belong to Store: an image is only checked against the store's
	// revisions. Ignored with RetainObjects.
	ImageFile string
	// ImageTag names what writes and reads images: an image whose tag
	// differs is not used. Set it to something that changes whenever
	// Attrs, the indexes or the stored layout may (the binary's build ID).
	ImageTag string

	// MinEvents is the smallest event window kept (default 1,000 events).
	MinEvents int
	// MaxEvents bounds the window whatever the churn (default 200,000).
	MaxEvents int
	// ReconnectInterval is how long after an event a watcher may reconnect
	// from its revision and still find it in the window; the window grows
	// (up to MaxEvents) to cover it. Default 75 s.
	ReconnectInterval time.Duration
	// PrefillRevisions is how far back, in store revisions, the event
	// window is refilled from the store's history each time the cache
	// lists the store (at start, and after a re-list): the window then
	// starts at max(store compacted revision, list revision -
	// PrefillRevisions) instead of at the list, so a client that was
	// behind when the API server restarted resumes its watch rather than
	// re-listing. Default 20,000; negative disables it.
	//
	// Cost: the store's history is one log for every prefix, so each
	// cache reads every record in that range, all resource types', and
	// decodes its own (two objects per update); with one cache per
	// resource type a restart reads the range once per type. See
	// docs/bench/cache.md for the measured start time. The window holds
	// the prefilled events for ReconnectInterval, bounded by MaxEvents.
	PrefillRevisions int64
	// BookmarkInterval is the longest a bookmark-enabled watcher goes
	// without hearing the current revision. Default 1 min.
	BookmarkInterval time.Duration
	// ReadWaitTimeout bounds how long a read waits for the cache to reach
	// the revision it needs before answering 504. Default 3 s (upstream's).
	ReadWaitTimeout time.Duration
	// WatcherBuffer is the channel capacity of a watcher restricted to one
	// index value (a node's pods, a namespace); a watcher that sees the
	// whole resource gets ten times as much, as it gets every event. A
	// watcher whose channel is full when an event arrives is ended so that
	// dispatch never blocks; its client re-watches from the last revision
	// it received. Default 100 (10,000 node watchers then hold 8 MB of
	// channel buffers, not 80).
	WatcherBuffer int
	// Clock drives the window's ages, bookmarks and read timeouts. Default
	// the real clock.
	Clock clock.Clock
	// Metrics receives the cache's metrics when set (several caches may
	// share one registry: their series differ by the resource label).
	Metrics prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (cfg *Config) validateAndDefault() error {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("config field Store is required"))
	}
	if cfg.Prefix == "" || !strings.HasSuffix(cfg.Prefix, "/") {
		errs = append(errs, fmt.Errorf("config field Prefix %q must be non-empty and end in /", cfg.Prefix))
	}
	if cfg.NewFunc == nil {
		errs = append(errs, errors.New("config field NewFunc is required"))
	}
	if cfg.Decode == nil {
		errs = append(errs, errors.New("config field Decode is required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("cache: invalid config: %w", errors.Join(errs...))
	}
	if cfg.Attrs == nil {
		cfg.Attrs = defaultAttrs
	}
	if cfg.IndexedLabels == nil {
		cfg.IndexedLabels = []string{"app"}
	}
	if cfg.MinEvents <= 0 {
		cfg.MinEvents = 1000
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 200_000
	}
	if cfg.MaxEvents < cfg.MinEvents {
		cfg.MaxEvents = cfg.MinEvents
	}
	if cfg.PrefillRevisions == 0 {
		cfg.PrefillRevisions = 20_000
	}
	if cfg.ReconnectInterval <= 0 {
		cfg.ReconnectInterval = 75 * time.Second
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.ReadWaitTimeout <= 0 {
		cfg.ReadWaitTimeout = 3 * time.Second
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = 100
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("component", "cache", "prefix", cfg.Prefix)
	return nil
}

func defaultAttrs(obj runtime.Object) (labels.Set, fields.Set) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return m.GetLabels(), fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}
