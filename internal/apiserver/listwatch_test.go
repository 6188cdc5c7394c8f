package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

func createConfigMaps(t *testing.T, e *testEnv, ns string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(context.Background(), testConfigMap(fmt.Sprintf("cm-%03d", i), map[string]string{"parity": strconv.Itoa(i % 2)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListPagination(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	createConfigMaps(t, e, "default", 25)
	cms := e.cs.CoreV1().ConfigMaps("default")
	for _, tc := range []struct {
		name  string
		opts  metav1.ListOptions
		limit int64
		want  int
	}{
		{"all", metav1.ListOptions{}, 7, 25},
		{"label selector", metav1.ListOptions{LabelSelector: "parity=1"}, 4, 12},
		{"field selector", metav1.ListOptions{FieldSelector: "metadata.name!=cm-000"}, 10, 24},
		{"limit larger than the list", metav1.ListOptions{}, 500, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Limit = tc.limit
			var names []string
			var rv string
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatal("pagination does not end")
				}
				l, err := cms.List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(l.Items)) > tc.limit {
					t.Fatalf("page of %d items for limit %d", len(l.Items), tc.limit)
				}
				if rv == "" {
					rv = l.ResourceVersion
				} else if l.ResourceVersion != rv {
					t.Fatalf("page at rv %s, first page at %s: not one snapshot", l.ResourceVersion, rv)
				}
				for _, cm := range l.Items {
					names = append(names, cm.Name)
				}
				if l.Continue == "" {
					if l.RemainingItemCount != nil && *l.RemainingItemCount != 0 {
						t.Fatalf("last page claims %d remaining", *l.RemainingItemCount)
					}
					break
				}
				opts.Continue = l.Continue
				// Writes between pages do not show in the snapshot.
				if pages == 0 {
					if _, err := cms.Create(ctx, testConfigMap(fmt.Sprintf("late-%s", tc.name[:3]), map[string]string{"parity": "1"}), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(names) != tc.want || !sort.StringsAreSorted(names) {
				t.Fatalf("got %d names (want %d), sorted=%v: %v", len(names), tc.want, sort.StringsAreSorted(names), names)
			}
			// Clean up the late objects so the next case counts the same.
			_ = cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=late-" + tc.name[:3]})
		})
	}
}

func TestListResourceVersionSemantics(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, testConfigMap("one", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, testConfigMap("two", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		want int
	}{
		{"latest", metav1.ListOptions{}, 2},
		{"any", metav1.ListOptions{ResourceVersion: "0"}, 2},
		{"not older than", metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, 2},
		{"exact", metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := cms.List(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != tc.want {
				t.Fatalf("got %d items, want %d", len(l.Items), tc.want)
			}
		})
	}
	// Read-your-writes: a get right after an update sees it.
	for i := 0; i < 20; i++ {
		first.Data = map[string]string{"i": strconv.Itoa(i)}
		if first, err = cms.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cms.Get(ctx, "one", metav1.GetOptions{})
		if err != nil || got.ResourceVersion != first.ResourceVersion {
			t.Fatalf("get after update: %v rv %s want %s", err, got.ResourceVersion, first.ResourceVersion)
		}
	}
}

func nextEvent(t *testing.T, w watch.Interface, timeout time.Duration) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(timeout):
		t.Fatal("no watch event")
	}
	panic("unreachable")
}

func TestWatchFromResourceVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.cs.CoreV1().ConfigMaps("default")
	a, err := cms.Create(ctx, testConfigMap("a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, testConfigMap("b", map[string]string{"x": "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// From a's revision: b's creation, then a's deletion, in order.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []struct {
		typ  watch.EventType
		name string
	}{{watch.Added, "b"}, {watch.Deleted, "a"}} {
		ev := nextEvent(t, w, 10*time.Second)
		if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != want.typ || !ok || cm.Name != want.name {
			t.Fatalf("want %s %s, got %s %#v", want.typ, want.name, ev.Type, ev.Object)
		}
	}
	// A filtered watch sees only what matches.
	lw, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion, LabelSelector: "x=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Stop()
	if ev := nextEvent(t, lw, 10*time.Second); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "b" {
		t.Fatalf("filtered watch: %s %#v", ev.Type, ev.Object)
	}
	// Single-object watch via a field selector.
	if _, err := cms.Create(ctx, testConfigMap("c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-lw.ResultChan():
		t.Fatalf("filtered watch delivered %s %#v", ev.Type, ev.Object)
	default:
	}
}

func TestWatchSendInitialEvents(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	createConfigMaps(t, e, "default", 3)
	w, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr(true),
		AllowWatchBookmarks:  true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := map[string]bool{}
	for {
		ev := nextEvent(t, w, 10*time.Second)
		if ev.Type == watch.Bookmark {
			m, _ := ev.Object.(*corev1.ConfigMap)
			if m == nil || m.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("bookmark without the initial-events-end annotation: %#v", ev.Object)
			}
			if m.ResourceVersion == "" {
				t.Fatal("initial-events-end bookmark without a resourceVersion")
			}
			break
		}
		if ev.Type != watch.Added {
			t.Fatalf("initial event %s %#v", ev.Type, ev.Object)
		}
		seen[ev.Object.(*corev1.ConfigMap).Name] = true
	}
	if len(seen) != 3 {
		t.Fatalf("initial events for %v, want 3 objects", seen)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap("after", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w, 10*time.Second); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "after" {
		t.Fatalf("after the bookmark: %s %#v", ev.Type, ev.Object)
	}
}

func TestWatchTimeoutSeconds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	start := time.Now()
	w, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch with timeoutSeconds=1 still open after 20s")
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("watch ended after %v, before its timeout", d)
	}
}

// TestWatchPeriodicBookmark: the cache's periodic bookmarks reach client-go
// as decodable Bookmark events (they once lacked TypeMeta).
func TestWatchPeriodicBookmark(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, withConfig(func(c *Config) { c.Clock = fc }))
	ctx := context.Background()
	list, err := e.cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Advance the revision past the watcher's without an event for it: a
	// bookmark is what tells it about the new revision.
	e.createNamespace("elsewhere")
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if ev.Type != watch.Bookmark {
				t.Fatalf("want a bookmark, got %s %#v", ev.Type, ev.Object)
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || cm.ResourceVersion == "" {
				t.Fatalf("bad bookmark object %#v", ev.Object)
			}
			return
		case <-tick.C:
			fc.Step(30 * time.Second) // past the cache's bookmark interval
		case <-deadline:
			t.Fatal("no bookmark within 20s while the fake clock ran ahead")
		}
	}
}
