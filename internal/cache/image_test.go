package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// listCountingStore counts the Lists of the store it wraps: a start from
// an image lists nothing.
type listCountingStore struct {
	storage.Store
	lists atomic.Int64
}

func (s *listCountingStore) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, prefix)
}

// imagePod is a pod long enough past the compressed head for the cache to
// learn a dictionary from, in one of three nodes and two phases.
func imagePod(i int) *corev1.Pod {
	p := newPod(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("pod-%04d", i), fmt.Sprintf("node-%d", i%3), map[string]string{"app": fmt.Sprintf("a%d", i%4), "tier": "web"})
	p.Annotations = map[string]string{"note": strings.Repeat("image ", 30)}
	if i%2 == 0 {
		p.Status.Phase = corev1.PodRunning
	}
	return p
}

// createPods creates pods [from, to) on a few goroutines, so the store
// commits them in batches.
func (e *env) createPods(from, to int) {
	e.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := from + w; i < to; i += 8 {
				p := imagePod(i)
				if _, err := e.store.Create(e.ctx, podKey(p.Namespace, p.Name), e.codec.encode(e.t, p)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
}

// snapshot is what a test compares between caches: lists by several
// selectors, and every pod as Get returns it.
func (e *env) snapshot(c *Cache) map[string][]string {
	e.t.Helper()
	out := map[string][]string{}
	for name, opts := range map[string]ListOptions{
		"all":        {},
		"ns1":        {Namespace: "ns1"},
		"app=a1":     {Label: labels.SelectorFromSet(labels.Set{"app": "a1"})},
		"tier=web":   {Label: labels.SelectorFromSet(labels.Set{"tier": "web"})},
		"node-2":     {Field: fields.OneTermEqualSelector("spec.nodeName", "node-2")},
		"Running":    {Field: fields.OneTermEqualSelector("status.phase", "Running")},
		"pod-0007":   {Field: fields.OneTermEqualSelector("metadata.name", "pod-0007")},
		"not node-0": {Field: fields.OneTermNotEqualSelector("spec.nodeName", "node-0")},
	} {
		prev := e.c
		e.c = c
		got, _, err := e.list(opts)
		e.c = prev
		if err != nil {
			e.t.Fatalf("list %s: %v", name, err)
		}
		out[name] = got
	}
	for _, s := range out["all"] {
		key := podPrefix + s[:strings.IndexByte(s, '@')]
		obj, err := c.Get(e.ctx, key, "")
		if err != nil {
			e.t.Fatalf("get %s: %v", key, err)
		}
		p := obj.(*corev1.Pod)
		out["get"] = append(out["get"], fmt.Sprintf("%s %v %s %s %s", key, p.Labels, p.Spec.NodeName, p.Status.Phase, p.Annotations["note"]))
	}
	return out
}

// restart stops e's cache, saves its image and starts another cache over
// the same store and file, returning it and how often it listed the store.
func (e *env) restart(mutate func(*Config)) (*Cache, int64) {
	e.t.Helper()
	e.c.Stop()
	if err := e.c.SaveImage(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return e.startFrom(mutate)
}

// startFrom starts a cache like e's over a list-counting store.
func (e *env) startFrom(mutate func(*Config)) (*Cache, int64) {
	e.t.Helper()
	counting := &listCountingStore{Store: e.store}
	c := e.newReadyCache(e.config(func(cfg *Config) {
		mutate(cfg)
		cfg.Store = counting
	}))
	return c, counting.lists.Load()
}

// waitStore waits until the cache has every write the store has taken.
func (e *env) waitStore() {
	e.t.Helper()
	rev, err := e.store.CurrentRevision(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.waitRev(rev)
}

// savedEnv is a cache of pods pods with an image at file, stopped and its
// image saved.
func savedEnv(t testing.TB, file string, pods int) *env {
	t.Helper()
	e := newEnv(t, withImage(file))
	e.createPods(0, pods)
	e.waitStore()
	e.c.Stop()
	if err := e.c.SaveImage(e.ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func withImage(file string) func(*Config) {
	return func(cfg *Config) {
		cfg.CompressValues = true
		cfg.ImageFile = file
		cfg.ImageTag = "build-1"
	}
}

func TestImageRestoresTheState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pods.img")
	e := newEnv(t, withImage(file))
	// Past dictEvery * dictSamples values: the cache learns a dictionary,
	// so the image must carry it for its values to decompress.
	const n = dictEvery*dictSamples + 100
	e.createPods(0, n)
	e.waitRev(e.update(imagePod(5))) // a pod whose create and mod revisions differ
	if e.c.compressor.dict.Load() == nil {
		t.Fatal("the cache learned no dictionary; the test does not cover it")
	}
	want := e.snapshot(e.c)
	if len(want["all"]) != n {
		t.Fatalf("listed %d pods, want %d", len(want["all"]), n)
	}
	rev := e.c.Revision()

	c, lists := e.restart(withImage(file))
	if lists != 0 {
		t.Errorf("the start listed the store %d times; want it filled from the image", lists)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the image is still there after the start (err %v); it must be read once", err)
	}
	if got := c.Revision(); got != rev {
		t.Errorf("revision after the start %d, want %d", got, rev)
	}
	if got := e.snapshot(c); !reflect.DeepEqual(got, want) {
		t.Errorf("state from the image differs from the state saved:\ngot  %v\nwant %v", got, want)
	}
	if c.Size("", nil, nil).Objects != int64(n) || c.Size("", nil, nil).Bytes != e.c.Size("", nil, nil).Bytes {
		t.Errorf("size %+v, want %+v", c.Size("", nil, nil), e.c.Size("", nil, nil))
	}
	// Sanity of the comparison: a start with no image lists.
	if _, lists := e.startFrom(withImage(file)); lists != 1 {
		t.Errorf("a start without an image listed %d times, want 1", lists)
	}
}

// TestImageFollowsLaterWrites: writes the store took after the image (as
// another API server over the same store would) reach the cache through
// its watch from the image's revision, and its window covers them.
func TestImageFollowsLaterWrites(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pods.img")
	e := savedEnv(t, file, 20)
	saved := e.c.Revision()
	e.update(imagePod(3))
	e.delete("ns1", "pod-0004")
	last := e.create(imagePod(20))

	c, lists := e.startFrom(withImage(file))
	if lists != 0 {
		t.Fatalf("the start listed the store %d times; want it filled from the image", lists)
	}
	e.c = c
	e.waitRev(last)
	got := e.snapshot(c)

	// A cache that lists the same store is what the state must equal.
	fresh, _ := e.startFrom(func(*Config) {})
	if want := e.snapshot(fresh); !reflect.DeepEqual(got, want) {
		t.Errorf("state from the image and the store's later writes differs from a fresh list:\ngot  %v\nwant %v", got, want)
	}

	w, err := c.Watch(e.ctx, WatchOptions{ResourceVersion: fmt.Sprint(saved)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var evs []string
	for range 3 {
		evs = append(evs, describe(next(t, w)))
	}
	if want := []string{"MODIFIED ns0/pod-0003", "DELETED ns1/pod-0004", "ADDED ns2/pod-0020"}; !reflect.DeepEqual(trimRevs(evs), want) {
		t.Errorf("watch from the image's revision: %v, want %v", evs, want)
	}
}

// trimRevs drops the "@rev" describe appends.
func trimRevs(evs []string) []string {
	out := make([]string, len(evs))
	for i, s := range evs {
		out[i], _, _ = strings.Cut(s, "@")
	}
	return out
}

// TestImageNotUsed: an image the start cannot trust is ignored (and
// removed), and the start lists the store as it would without one.
func TestImageNotUsed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil acts on the saved image and the store before the start.
		spoil  func(t *testing.T, e *env, file string)
		mutate func(*Config)
	}{
		{name: "another tag", mutate: func(cfg *Config) { cfg.ImageTag = "build-2" }},
		{name: "another prefix's", spoil: func(t *testing.T, e *env, file string) {
			if err := os.Rename(file, file+".other"); err != nil {
				t.Fatal(err)
			}
		}, mutate: func(cfg *Config) { cfg.ImageFile += ".other"; cfg.Prefix = "/core/otherpods/" }},
		{name: "a flipped byte", spoil: func(t *testing.T, e *env, file string) {
			editFile(t, file, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })
		}},
		{name: "cut short", spoil: func(t *testing.T, e *env, file string) {
			editFile(t, file, func(b []byte) []byte { return b[:len(b)-10] })
		}},
		{name: "empty", spoil: func(t *testing.T, e *env, file string) {
			editFile(t, file, func([]byte) []byte { return nil })
		}},
		{name: "history compacted past it", spoil: func(t *testing.T, e *env, file string) {
			e.update(imagePod(1))
			if err := e.store.Compact(e.ctx, e.writeOther("later")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pods.img")
			e := savedEnv(t, file, 30)
			if tc.spoil != nil {
				tc.spoil(t, e, file)
			}
			mutate := withImage(file)
			if tc.mutate != nil {
				mutate = func(cfg *Config) { withImage(file)(cfg); tc.mutate(cfg) }
			}
			c, lists := e.startFrom(mutate)
			if lists != 1 {
				t.Errorf("the start listed the store %d times, want 1", lists)
			}
			cfg := e.config(mutate)
			if _, err := os.Stat(cfg.ImageFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the unused image is still there (err %v)", err)
			}
			fresh, _ := e.startFrom(func(cfg *Config) { cfg.Prefix = c.cfg.Prefix })
			if got, want := e.snapshot(c), e.snapshot(fresh); !reflect.DeepEqual(got, want) {
				t.Errorf("state differs from a fresh list:\ngot  %v\nwant %v", got, want)
			}
		})
	}
	t.Run("a newer store's", func(t *testing.T) {
		// An image at a revision the store has not reached cannot be its.
		file := filepath.Join(t.TempDir(), "pods.img")
		e := savedEnv(t, file, 30)
		e.store = openStore(t)
		e.create(imagePod(1))
		c, lists := e.startFrom(withImage(file))
		if lists != 1 || c.Size("", nil, nil).Objects != 1 {
			t.Errorf("listed %d times, %d objects; want 1 list and the new store's 1 pod", lists, c.Size("", nil, nil).Objects)
		}
	})
}

func editFile(t *testing.T, file string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSaveImageNeedsAStoppedReadyCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pods.img")
	e := newEnv(t, nil)
	c, err := New(e.config(withImage(file)))
	if err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if err := c.SaveImage(e.ctx); !errors.Is(err, ErrNoImage) {
		t.Errorf("SaveImage of a cache never started: %v, want ErrNoImage", err)
	}
	e.c.Stop()
	if err := e.c.SaveImage(e.ctx); !errors.Is(err, ErrNoImage) {
		t.Errorf("SaveImage without ImageFile: %v, want ErrNoImage", err)
	}
	running := newEnv(t, withImage(file))
	if err := running.c.SaveImage(running.ctx); err == nil {
		t.Error("SaveImage of a running cache succeeded; it must be stopped first")
	}
}

// FuzzParseImage: whatever the file holds, parsing fails cleanly or
// yields a state whose entries are well formed.
func FuzzParseImage(f *testing.F) {
	file := filepath.Join(f.TempDir(), "pods.img")
	e := savedEnv(f, file, 5)
	b, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(imageMagic))
	c, err := New(e.config(withImage(file)))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The checksum would reject nearly every mutation; fix it up so
		// the fuzzer reaches the parser behind it.
		if len(data) >= len(imageMagic)+4 {
			body := data[:len(data)-4]
			data = append(body[:len(body):len(body)], crcBytes(body)...)
		}
		img, err := c.parseImage(data)
		if err != nil {
			return
		}
		img.st.all.Ascend(func(en *entry) bool {
			if !strings.HasPrefix(en.key, podPrefix) || en.rev > img.rev || int(en.nlabels) > len(en.attrs) {
				t.Fatalf("malformed entry %+v", en)
			}
			_, _ = en.label("app")
			_ = en.field("spec.nodeName")
			return true
		})
	})
}

func crcBytes(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(nil, crc32.Checksum(body, imageCRC))
}

// BenchmarkImageParse: reading back an image of benchPods() pods (200,000;
// MYRIAD_BENCH_PODS for fewer), what a restart does per cache instead of
// listing and decoding the store.
func BenchmarkImageParse(b *testing.B) {
	codec := newPodCodec(b)
	c, err := New(Config{
		Store: &listCountingStore{}, Prefix: podPrefix,
		NewFunc:        func() runtime.Object { return &corev1.Pod{} },
		Decode:         codec.decode,
		Attrs:          podAttrs,
		IndexedFields:  []string{"spec.nodeName"},
		CompressValues: true,
		ImageFile:      "unused",
	})
	if err != nil {
		b.Fatal(err)
	}
	n := benchPods()
	kvs := make([]storage.KeyValue, n)
	for i := range kvs {
		p := benchPod(i)
		kvs[i] = storage.KeyValue{Key: podKey(p.Namespace, p.Name), Value: codec.encode(b, p), ModRevision: int64(i + 1), CreateRevision: int64(i + 1)}
	}
	st := newState(podPrefix, c.cfg.IndexedFields, c.cfg.IndexedLabels)
	for _, e := range c.newEntries(kvs) {
		st.put(e)
	}
	var img bytes.Buffer
	if _, err := c.writeImage(context.Background(), &img, st, int64(n)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.parseImage(img.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
	b.ReportMetric(float64(img.Len())/float64(n), "image-B/object")
}
