package cache

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A value kept compressed reads back exactly, whatever its size and
// however well it compresses, with or without the compressor's
// dictionary; its head is its first bytes, uncompressed.
func TestCompressedValues(t *testing.T) {
	random := make([]byte, 3000)
	rand.New(rand.NewSource(1)).Read(random)
	largeRandom := make([]byte, 200_000)
	rand.New(rand.NewSource(2)).Read(largeRandom)
	for cname, cp := range map[string]*compressor{"plain": new(compressor), "with dictionary": learnedCompressor(t)} {
		for name, v := range map[string][]byte{
			"empty":          {},
			"short":          []byte("k8s\x00short"),
			"head exactly":   bytes.Repeat([]byte{'a'}, storedHead),
			"head and one":   bytes.Repeat([]byte{'b'}, storedHead+1),
			"repetitive":     bytes.Repeat([]byte("metadata:name:"), 200),
			"incompressible": random,
			// Past the 64 KiB a dictionary's matches can reach.
			"large":                bytes.Repeat([]byte("data: a ConfigMap of a megabyte "), 40_000),
			"large incompressible": largeRandom,
		} {
			t.Run(cname+"/"+name, func(t *testing.T) {
				st := Stored{Key: "/k", ModRevision: 3, raw: cp.compress(v), compressed: true, dict: cp.dict.Load()}
				if st.Len() != len(v) {
					t.Errorf("Len %d, want %d", st.Len(), len(v))
				}
				if want := v[:min(len(v), storedHead)]; !bytes.Equal(st.Head(), want) {
					t.Errorf("Head %q, want %q", st.Head(), want)
				}
				scratch := []byte("left over from an earlier value, longer than some")
				got, err := st.Value(&scratch)
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("Value = %q, %v; want %q", got, err, v)
				}
				if got, err := st.Value(nil); err != nil || !bytes.Equal(got, v) {
					t.Fatalf("Value(nil) = %q, %v", got, err)
				}
				if len(v) > 1000 && !strings.Contains(name, "incompressible") && len(st.raw) > len(v)/2 {
					t.Errorf("kept %d bytes of %d", len(st.raw), len(v))
				}
			})
		}
	}
}

// learnValues is how many values, each long enough to be a sample, make
// a compressor's dictionary.
const learnValues = dictEvery * dictSamples

// learnedCompressor is a compressor that has made its dictionary from
// pods.
func learnedCompressor(t testing.TB) *compressor {
	pc := newPodCodec(t)
	cp := new(compressor)
	for i := range learnValues {
		cp.compress(pc.encode(t, benchPod(i)))
	}
	if cp.dict.Load() == nil {
		t.Fatalf("no dictionary after %d pods", learnValues)
	}
	return cp
}

// The compressor makes its dictionary from every dictEvery-th of its first
// values long enough to be samples and compresses every later value
// against it; similar values come out much smaller than alone, and every
// value, from before the dictionary or after, reads back exactly.
func TestCompressorDictionary(t *testing.T) {
	pc := newPodCodec(t)
	var cp compressor
	for range 2 * learnValues {
		cp.compress(bytes.Repeat([]byte{'s'}, storedHead+dictSampleBytes-1))
	}
	if cp.dict.Load() != nil {
		t.Fatal("values too short to be samples made a dictionary")
	}
	var vals, raws [][]byte
	for i := range learnValues + 100 {
		v := pc.encode(t, benchPod(i))
		vals, raws = append(vals, v), append(raws, cp.compress(v))
	}
	dict := cp.dict.Load()
	if dict == nil {
		t.Fatalf("no dictionary after %d pods", len(vals))
	}
	alone, against := 0, 0
	for i, raw := range raws {
		_, _, withDict, err := splitCompressed(raw)
		if want := i >= learnValues-1; err != nil || withDict != want {
			t.Fatalf("pod %d compressed with the dictionary: %v (%v), want %v", i, withDict, err, want)
		}
		st := Stored{Key: "/k", ModRevision: 3, raw: raw, compressed: true, dict: dict}
		if got, err := st.Value(nil); err != nil || !bytes.Equal(got, vals[i]) {
			t.Fatalf("pod %d: Value = %v; not the value compressed", i, err)
		}
		if i >= learnValues {
			against += len(raw)
			alone += len(new(compressor).compress(vals[i]))
		}
	}
	if against*2 > alone {
		t.Errorf("pods against the dictionary kept %d bytes, alone %d: want less than half", against, alone)
	}
	st := Stored{Key: "/k", ModRevision: 3, raw: raws[len(raws)-1], compressed: true}
	if _, err := st.Value(nil); !errors.Is(err, errNoDict) {
		t.Errorf("a value compressed with a dictionary read without it: %v, want %v", err, errNoDict)
	}
}

// Values compressed concurrently while the dictionary is being learned
// (a cache's initial list decodes on every core) all read back.
func TestCompressorLearnsConcurrently(t *testing.T) {
	pc := newPodCodec(t)
	vals := make([][]byte, 2*learnValues)
	for i := range vals {
		vals[i] = pc.encode(t, benchPod(i))
	}
	var cp compressor
	raws := make([][]byte, len(vals))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < len(vals); i += 8 {
				raws[i] = cp.compress(vals[i])
			}
		})
	}
	wg.Wait()
	if cp.dict.Load() == nil {
		t.Fatalf("no dictionary after %d pods", len(vals))
	}
	for i, raw := range raws {
		st := Stored{Key: "/k", ModRevision: 3, raw: raw, compressed: true, dict: cp.dict.Load()}
		if got, err := st.Value(nil); err != nil || !bytes.Equal(got, vals[i]) {
			t.Fatalf("pod %d: Value = %v; not the value compressed", i, err)
		}
	}
}

// Damage to a kept value is an error naming the key, never a panic or
// wrong bytes.
func TestCompressedValueDamage(t *testing.T) {
	raw := new(compressor).compress(bytes.Repeat([]byte("pod spec containers "), 50))
	for name, bad := range map[string][]byte{
		"truncated":   raw[:len(raw)/2],
		"no header":   {},
		"head beyond": {0x7f, 'a'},
		"block bytes": append(append([]byte{}, raw[:storedHead+1]...), 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00),
	} {
		t.Run(name, func(t *testing.T) {
			st := Stored{Key: "/k", ModRevision: 3, raw: bad, compressed: true}
			_, err := st.Value(nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !bytes.Contains([]byte(err.Error()), []byte("/k at revision 3")) && !errors.Is(err, errBadCompressed) {
				t.Errorf("error %v does not name the key", err)
			}
		})
	}
}

// Without compression a Stored is the cache's own bytes.
func TestUncompressedStored(t *testing.T) {
	v := []byte("k8s\x00value")
	st := Stored{raw: v}
	if got, _ := st.Value(nil); &got[0] != &v[0] || st.Len() != len(v) || !bytes.Equal(st.Head(), v) {
		t.Errorf("uncompressed Stored does not pass its bytes through")
	}
}

// neverLearns is a compressor without a dictionary for good.
func neverLearns() *compressor {
	cp := new(compressor)
	cp.learned.Store(true)
	return cp
}

// BenchmarkCompressPod compresses pods and reads them back, each alone
// and against a dictionary of the first ones; kept-B/op is what the cache
// holds of a pod's value.
func BenchmarkCompressPod(b *testing.B) {
	pc := newPodCodec(b)
	vals := make([][]byte, 256)
	for i := range vals {
		vals[i] = pc.encode(b, benchPod(i))
	}
	for name, cp := range map[string]*compressor{"alone": neverLearns(), "dictionary": learnedCompressor(b)} {
		raws := make([][]byte, len(vals))
		kept := 0
		for i, v := range vals {
			raws[i] = cp.compress(v)
			kept += len(raws[i])
		}
		b.Run(name+"/compress", func(b *testing.B) {
			i := 0
			for b.Loop() {
				cp.compress(vals[i%len(vals)])
				i++
			}
			b.ReportMetric(float64(kept)/float64(len(vals)), "kept-B/op")
		})
		b.Run(name+"/decompress", func(b *testing.B) {
			var scratch []byte
			i := 0
			for b.Loop() {
				st := Stored{raw: raws[i%len(raws)], compressed: true, dict: cp.dict.Load()}
				if _, err := st.Value(&scratch); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// Whether the cache keeps values compressed or not, GetStored, ListStored,
// List and watch events give the bytes and objects the store holds: for
// objects from the initial list and from the watch alike.
func TestReadsAgreeWithAndWithoutCompression(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			e := newEnv(t, nil)
			e.create(newPod("ns", "listed", "n1", map[string]string{"app": "a"}))
			e.c.Stop()
			e.startCache(func(c *Config) { c.CompressValues = compress })
			w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: "0"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			next(t, w) // listed, as the watch's initial state
			e.waitRev(e.create(newPod("ns", "watched", "n2", map[string]string{"app": "b"})))
			if ev := next(t, w); evObj(ev).(*corev1.Pod).Name != "watched" {
				t.Fatalf("watch event for %s", describe(ev))
			}

			for _, name := range []string{"listed", "watched"} {
				want, err := e.store.Get(e.ctx, podKey("ns", name))
				if err != nil {
					t.Fatal(err)
				}
				got, ok := e.c.GetStored(podKey("ns", name))
				if !ok || !bytes.Equal(got.Value, want.Value) || got.ModRevision != want.ModRevision {
					t.Errorf("GetStored(%s) = %v, %d; want the store's %d bytes at %d", name, ok, got.ModRevision, len(want.Value), want.ModRevision)
				}
			}
			var listed int
			var scratch []byte
			if _, err := e.c.ListStored(e.ctx, ListOptions{Namespace: "ns"}, func(st Stored) error {
				want, err := e.store.Get(e.ctx, st.Key)
				if err != nil {
					return err
				}
				v, err := st.Value(&scratch)
				if err != nil || !bytes.Equal(v, want.Value) || st.Len() != len(want.Value) {
					t.Errorf("ListStored %s: %d bytes, %v; want the store's %d", st.Key, len(v), err, len(want.Value))
				}
				listed++
				return nil
			}); err != nil || listed != 2 {
				t.Fatalf("ListStored: %d items, %v", listed, err)
			}
			got, _, err := e.list(ListOptions{Namespace: "ns", Label: labels.SelectorFromSet(labels.Set{"app": "b"})})
			if err != nil || len(got) != 1 || names(got)[0] != "ns/watched" {
				t.Errorf("List by label: %v, %v", got, err)
			}
		})
	}
}
