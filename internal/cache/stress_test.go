package cache

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Under concurrent writes, every watcher — whatever its selector, start
// mode, and whether it started mid-stream — sees a gapless, ordered stream
// that rebuilds exactly the state a list at the final revision returns.
func TestWatchersRebuildListedState(t *testing.T) {
	e := newEnv(t, nil)
	nodes, apps := []string{"n1", "n2", "n3"}, []string{"x", "y"}
	write := func(r *rand.Rand, i int) int64 {
		name := fmt.Sprintf("p%02d", r.IntN(30))
		ns := []string{"a", "b"}[r.IntN(2)]
		p := newPod(ns, name, nodes[r.IntN(3)], map[string]string{"app": apps[r.IntN(2)]})
		key := podKey(ns, name)
		cur, err := e.store.Get(e.ctx, key)
		switch {
		case err != nil:
			rev, err := e.store.Create(e.ctx, key, e.codec.encode(t, p))
			if err != nil {
				return 0 // a concurrent writer created it
			}
			return rev
		case i%5 == 0:
			_, rev, err := e.store.Delete(e.ctx, key, cur.ModRevision)
			if err != nil {
				return 0
			}
			return rev
		default:
			rev, err := e.store.Update(e.ctx, key, e.codec.encode(t, p), cur.ModRevision)
			if err != nil {
				return 0
			}
			return rev
		}
	}
	selectors := []struct {
		ns    string
		label labels.Selector
		field fields.Selector
	}{
		{},
		{ns: "a"},
		{field: fields.OneTermEqualSelector("spec.nodeName", "n2")},
		{label: labels.SelectorFromSet(labels.Set{"app": "y"})},
		{ns: "b", field: fields.OneTermEqualSelector("spec.nodeName", "n1")},
		{field: fields.OneTermNotEqualSelector("spec.nodeName", "n3")},
		{field: fields.OneTermEqualSelector("metadata.name", "p03")},
		{ns: "a", field: fields.OneTermEqualSelector("metadata.name", "p04")},
	}
	type result struct {
		sel   int
		state map[string]string // key -> rv
		last  int64
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
		stop    = make(chan struct{})
	)
	startWatcher := func(sel int, opts WatchOptions) {
		s := selectors[sel]
		opts.Namespace, opts.Label, opts.Field = s.ns, s.label, s.field
		state := map[string]string{}
		var base int64
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" && opts.SendInitialEvents == nil {
			// Start from a list at that exact revision.
			rv := opts.ResourceVersion
			_, err := e.c.List(e.ctx, ListOptions{ResourceVersion: rv, ResourceVersionMatch: "Exact", Namespace: s.ns, Label: s.label, Field: s.field}, func(obj runtime.Object) error {
				p := obj.(*corev1.Pod)
				state[p.Namespace+"/"+p.Name] = p.ResourceVersion
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			base, _ = parseRV(rv)
		}
		w, err := e.c.Watch(e.ctx, opts)
		if err != nil {
			t.Error(err)
			return
		}
		// Initial events come in key order, each with its object's own
		// revision, all at most the cache's revision once Watch returned;
		// only the changes after them are in revision order.
		initial := opts.ResourceVersion == "0" || (opts.SendInitialEvents != nil && *opts.SendInitialEvents)
		snapshotEnd := e.c.Revision()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			last := base
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Errorf("selector %d: watch closed early", sel)
						return
					}
					if ev.Type == watch.Bookmark {
						continue
					}
					if initial && ev.Type == watch.Added && ev.Revision <= snapshotEnd {
						// still (possibly) an initial event
					} else if ev.Revision < last || (ev.Revision == last && ev.Type != watch.Added) {
						t.Errorf("selector %d: %s after revision %d", sel, describe(ev), last)
					} else {
						initial = false
					}
					last = max(last, ev.Revision)
					p := evObj(ev).(*corev1.Pod)
					k := p.Namespace + "/" + p.Name
					if ev.Type == watch.Deleted {
						delete(state, k)
					} else {
						state[k] = p.ResourceVersion
					}
				case <-stop:
					mu.Lock()
					results = append(results, result{sel, state, last})
					mu.Unlock()
					return
				}
			}
		}()
	}

	var writers sync.WaitGroup
	for wi := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			r := rand.New(rand.NewPCG(uint64(wi), 7))
			for i := range 150 {
				write(r, i)
			}
		}()
	}
	for round := range 3 {
		for sel := range selectors {
			switch round {
			case 0:
				startWatcher(sel, WatchOptions{ResourceVersion: "0"})
			case 1:
				startWatcher(sel, WatchOptions{ResourceVersion: formatRV(e.c.Revision())})
			case 2:
				startWatcher(sel, WatchOptions{SendInitialEvents: ptr(true), AllowBookmarks: true})
			}
		}
	}
	writers.Wait()
	final, err := e.store.CurrentRevision(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.waitRev(final)
	// Every event up to final has been dispatched once a marker written
	// after it reaches a watcher of everything.
	marker, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(final)})
	if err != nil {
		t.Fatal(err)
	}
	e.create(newPod("zz", "marker", "n9", nil))
	next(t, marker)
	marker.Stop()
	close(stop)
	wg.Wait()

	for _, r := range results {
		s := selectors[r.sel]
		want := map[string]string{}
		_, err := e.c.List(e.ctx, ListOptions{ResourceVersion: formatRV(final), ResourceVersionMatch: "Exact", Namespace: s.ns, Label: s.label, Field: s.field}, func(obj runtime.Object) error {
			p := obj.(*corev1.Pod)
			want[p.Namespace+"/"+p.Name] = p.ResourceVersion
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		delete(r.state, "zz/marker") // written after final
		if !maps.Equal(r.state, want) {
			t.Errorf("selector %d: watcher rebuilt %v\nlist at %d says %v", r.sel, r.state, final, want)
		}
	}
	if len(results) != 3*len(selectors) {
		t.Fatalf("%d watchers reported", len(results))
	}
}
