package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// A read without resourceVersion sees every write acknowledged before it,
// even when the cache's own keys are quiet and the store moved on through
// other prefixes: the cache asks the store for progress and waits.
func TestConsistentReadWaitsForProgress(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 5 {
		// Read-your-writes on the cache's own prefix, no polling.
		rev := e.create(newPod("ns", fmt.Sprintf("p%d", i), "n1", nil))
		obj, err := e.c.Get(e.ctx, podKey("ns", fmt.Sprintf("p%d", i)), "")
		if err != nil {
			t.Fatalf("consistent get after create: %v", err)
		}
		if got := obj.(*corev1.Pod).ResourceVersion; got != formatRV(rev) {
			t.Fatalf("rv = %s, want %d", got, rev)
		}
	}
	other := e.writeOther("a")
	other = max(other, e.writeOther("b"))
	_, res, err := e.list(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ResourceVersion; got < formatRV(other) || len(got) < len(formatRV(other)) {
		t.Fatalf("consistent list at %s, want >= %d (store's revision)", got, other)
	}
	if e.c.Revision() < other {
		t.Fatalf("cache revision %d < %d after a consistent read", e.c.Revision(), other)
	}
}

func TestResourceVersionSemantics(t *testing.T) {
	e := newEnv(t, nil)
	r1 := e.create(newPod("ns", "a", "n1", nil))
	r2 := e.create(newPod("ns", "b", "n1", nil))
	p := newPod("ns", "a", "n2", nil)
	r3 := e.update(p)
	r4 := e.delete("ns", "b")
	e.waitRev(r4)

	cases := []struct {
		name    string
		opts    ListOptions
		want    []string
		wantRV  int64
		wantErr func(error) bool
	}{
		{name: "unset is consistent", opts: ListOptions{}, want: []string{"ns/a@" + formatRV(r3)}, wantRV: r4},
		{name: "0 is the cache as is", opts: ListOptions{ResourceVersion: "0"}, want: []string{"ns/a@" + formatRV(r3)}, wantRV: r4},
		{name: "not older than an old rv gives the latest", opts: ListOptions{ResourceVersion: formatRV(r1)}, want: []string{"ns/a@" + formatRV(r3)}, wantRV: r4},
		{name: "exact r1", opts: ListOptions{ResourceVersion: formatRV(r1), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, want: []string{"ns/a@" + formatRV(r1)}, wantRV: r1},
		{name: "exact r2", opts: ListOptions{ResourceVersion: formatRV(r2), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, want: []string{"ns/a@" + formatRV(r1), "ns/b@" + formatRV(r2)}, wantRV: r2},
		{name: "exact r3 by node", opts: ListOptions{ResourceVersion: formatRV(r3), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Field: fields.OneTermEqualSelector("spec.nodeName", "n1")}, want: []string{"ns/b@" + formatRV(r2)}, wantRV: r3},
		{name: "exact r2 by node n1 sees a before it moved", opts: ListOptions{ResourceVersion: formatRV(r2), ResourceVersionMatch: metav1.ResourceVersionMatchExact, Field: fields.OneTermEqualSelector("spec.nodeName", "n1")}, want: []string{"ns/a@" + formatRV(r1), "ns/b@" + formatRV(r2)}, wantRV: r2},
		{name: "exact 0 is invalid", opts: ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: apierrors.IsBadRequest},
		{name: "garbage rv", opts: ListOptions{ResourceVersion: "x1"}, wantErr: apierrors.IsBadRequest},
		{name: "continue with rv", opts: ListOptions{ResourceVersion: "1", Continue: "abc"}, wantErr: apierrors.IsBadRequest},
		{name: "bad continue", opts: ListOptions{Continue: "!!"}, wantErr: apierrors.IsBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, res, err := e.list(tc.opts)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if res.ResourceVersion != formatRV(tc.wantRV) {
				t.Fatalf("list rv %s, want %d", res.ResourceVersion, tc.wantRV)
			}
		})
	}

	t.Run("get", func(t *testing.T) {
		if _, err := e.c.Get(e.ctx, podKey("ns", "b"), "0"); !IsNotFound(err) {
			t.Fatalf("deleted: err = %v", err)
		}
		obj, err := e.c.Get(e.ctx, podKey("ns", "a"), formatRV(r2))
		if err != nil || obj.(*corev1.Pod).Spec.NodeName != "n2" {
			t.Fatalf("get not older than r2: %v %v", obj, err)
		}
	})

	// A revision the store never issued comes from another store (the
	// resource moved to another etcd): waiting cannot help, 410 at once
	// makes clients relist. The fake clock never moves, so an answer
	// proves no timeout was waited out.
	t.Run("not older than a revision the store never issued is 410 at once", func(t *testing.T) {
		storeRev, err := e.store.CurrentRevision(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rv := range []int64{storeRev + 1, storeRev + 1_000_000} {
			if _, err := e.c.Get(e.ctx, podKey("ns", "a"), formatRV(rv)); !apierrors.IsResourceExpired(err) {
				t.Fatalf("get at %d (store at %d): err = %v, want 410 Expired", rv, storeRev, err)
			}
			if _, _, err := e.list(ListOptions{ResourceVersion: formatRV(rv)}); !apierrors.IsResourceExpired(err) {
				t.Fatalf("list at %d: err = %v, want 410 Expired", rv, err)
			}
			if _, _, err := e.list(ListOptions{ResourceVersion: formatRV(rv), ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsResourceExpired(err) {
				t.Fatalf("exact list at %d: err = %v, want 410 Expired", rv, err)
			}
		}
	})

	// A revision the store has reached through other keys is one the
	// cache reaches by asking for progress, without a write of its own.
	t.Run("not older than a revision of other keys is answered", func(t *testing.T) {
		rev := e.writeOther("elsewhere")
		obj, err := e.c.Get(e.ctx, podKey("ns", "a"), formatRV(rev))
		if err != nil || obj.(*corev1.Pod).Name != "a" {
			t.Fatalf("get at %d: %v %v", rev, obj, err)
		}
	})

	// A client that wrote through the store and reads at once at its
	// write's revision may be ahead of the cache: it waits, it is not
	// refused.
	t.Run("not older than a just-written revision is answered", func(t *testing.T) {
		want := e.create(newPod("ns", "c", "n1", nil))
		obj, err := e.c.Get(e.ctx, podKey("ns", "c"), formatRV(want))
		if err != nil {
			t.Fatal(err)
		}
		if got := obj.(*corev1.Pod); got.ResourceVersion != formatRV(want) {
			t.Fatalf("got rv %s, want %d", got.ResourceVersion, want)
		}
	})
}

// The state as of any revision inside the window equals what the store
// held then, for every selector shape (full, namespace, index, label).
func TestExactListFromWindow(t *testing.T) {
	e := newEnv(t, nil)
	type obj struct{ ns, node, app, rv string }
	model := map[string]obj{} // name -> current
	var history []struct {
		rev   int64
		state map[string]obj
	}
	snap := func(rev int64) {
		cp := make(map[string]obj, len(model))
		for k, v := range model {
			cp[k] = v
		}
		history = append(history, struct {
			rev   int64
			state map[string]obj
		}{rev, cp})
	}
	nss, nodes, apps := []string{"a", "b"}, []string{"n1", "n2", "n3"}, []string{"x", "y"}
	for i := range 60 {
		name := fmt.Sprintf("p%02d", i%15)
		cur, exists := model[name]
		var rev int64
		switch {
		case !exists:
			o := obj{ns: nss[i%2], node: nodes[i%3], app: apps[i%2]}
			rev = e.create(newPod(o.ns, name, o.node, map[string]string{"app": o.app}))
			o.rv = formatRV(rev)
			model[name] = o
		case i%4 == 3:
			rev = e.delete(cur.ns, name)
			delete(model, name)
		default:
			cur.node, cur.app = nodes[(i+1)%3], apps[(i/3)%2]
			rev = e.update(newPod(cur.ns, name, cur.node, map[string]string{"app": cur.app}))
			cur.rv = formatRV(rev)
			model[name] = cur
		}
		snap(rev)
	}
	e.waitRev(history[len(history)-1].rev)

	selectors := []struct {
		name   string
		opts   ListOptions
		filter func(obj) bool
	}{
		{"all", ListOptions{}, func(obj) bool { return true }},
		{"namespace", ListOptions{Namespace: "a"}, func(o obj) bool { return o.ns == "a" }},
		{"node index", ListOptions{Field: fields.OneTermEqualSelector("spec.nodeName", "n2")}, func(o obj) bool { return o.node == "n2" }},
		{"label index", ListOptions{Label: labels.SelectorFromSet(labels.Set{"app": "y"})}, func(o obj) bool { return o.app == "y" }},
		{"ns and node", ListOptions{Namespace: "b", Field: fields.OneTermEqualSelector("spec.nodeName", "n1")}, func(o obj) bool { return o.ns == "b" && o.node == "n1" }},
	}
	for _, h := range history {
		for _, sel := range selectors {
			opts := sel.opts
			opts.ResourceVersion, opts.ResourceVersionMatch = formatRV(h.rev), metav1.ResourceVersionMatchExact
			got, res, err := e.list(opts)
			if err != nil {
				t.Fatalf("rev %d %s: %v", h.rev, sel.name, err)
			}
			var want []string
			for name, o := range h.state {
				if sel.filter(o) {
					want = append(want, o.ns+"/"+name+"@"+o.rv)
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) || res.ResourceVersion != formatRV(h.rev) {
				t.Fatalf("rev %d %s: got %v @%s, want %v", h.rev, sel.name, got, res.ResourceVersion, want)
			}
		}
	}
}

// Page 2 is served as of page 1's revision, whatever was written between.
func TestPaginationAcrossConcurrentWrites(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 10 {
		e.create(newPod("ns", fmt.Sprintf("p%d", i), "n1", nil))
	}
	p1, res1, err := e.list(ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res1.Continue == "" || res1.RemainingItemCount == nil || *res1.RemainingItemCount != 6 {
		t.Fatalf("page 1: %v %+v", p1, res1)
	}
	// Writes that would change pages 2 and 3 if they were read live.
	e.delete("ns", "p5")
	e.create(newPod("ns", "p45", "n1", nil))
	e.update(newPod("ns", "p7", "n2", nil))
	last := e.delete("ns", "p0")
	e.waitRev(last)

	var all []string
	all = append(all, p1...)
	tok := res1.Continue
	for tok != "" {
		page, res, err := e.list(ListOptions{Limit: 4, Continue: tok})
		if err != nil {
			t.Fatal(err)
		}
		if res.ResourceVersion != res1.ResourceVersion {
			t.Fatalf("page at %s, first page at %s", res.ResourceVersion, res1.ResourceVersion)
		}
		all = append(all, page...)
		tok = res.Continue
	}
	want, _, err := e.list(ListOptions{ResourceVersion: res1.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all, want) || len(all) != 10 {
		t.Fatalf("paged %v\nwant    %v", all, want)
	}

	// A selective paginated list (by node), too.
	n1, res, err := e.list(ListOptions{Limit: 2, Field: fields.OneTermEqualSelector("spec.nodeName", "n1")})
	if err != nil || len(n1) != 2 || res.Continue == "" || res.RemainingItemCount != nil {
		t.Fatalf("by node page 1: %v %+v %v", n1, res, err)
	}
}

func TestExpiredContinue(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinEvents, c.MaxEvents = 4, 4 })
	for i := range 5 {
		e.create(newPod("ns", fmt.Sprintf("p%d", i), "n1", nil))
	}
	_, res, err := e.list(ListOptions{Limit: 2})
	if err != nil || res.Continue == "" {
		t.Fatalf("%+v %v", res, err)
	}
	var last int64
	for i := range 6 { // push the first page's revision out of the 4-event window
		last = e.update(newPod("ns", fmt.Sprintf("p%d", i%5), "n2", nil))
	}
	e.waitRev(last)
	_, _, err = e.list(ListOptions{ResourceVersion: res.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("exact list before the window: err = %v, want 410", err)
	}
	_, _, err = e.list(ListOptions{Limit: 2, Continue: res.Continue})
	var status apierrors.APIStatus
	if !apierrors.IsResourceExpired(err) || !errors.As(err, &status) || status.Status().Code != 410 {
		t.Fatalf("err = %v, want 410 Expired", err)
	}
	// The 410 carries upstream's inconsistent continue: the rest of the
	// list (p2, p3, p4) as of now, in pages that continue at that revision.
	next := status.Status().ListMeta.Continue
	if next == "" {
		t.Fatal("the 410 carries no continue token")
	}
	var rest []string
	var revs []string
	for next != "" {
		objs, page, err := e.list(ListOptions{Limit: 2, Continue: next})
		if err != nil {
			t.Fatalf("continuing with the inconsistent token: %v", err)
		}
		rest = append(rest, names(objs)...)
		revs = append(revs, page.ResourceVersion)
		next = page.Continue
	}
	if !slices.Equal(rest, []string{"ns/p2", "ns/p3", "ns/p4"}) {
		t.Errorf("rest of the list %v, want ns/p2, ns/p3, ns/p4", rest)
	}
	if want := fmt.Sprint(last); revs[0] != want || revs[len(revs)-1] != want || revs[0] == res.ResourceVersion {
		t.Errorf("pages at revisions %v, want the latest (%s) throughout, not the first page's %s", revs, want, res.ResourceVersion)
	}
}

func TestContinueToken(t *testing.T) {
	tok := encodeContinue(podPrefix+"ns/p1\x00", podPrefix, 42)
	key, rev, err := decodeContinue(tok, podPrefix)
	if err != nil || key != podPrefix+"ns/p1\x00" || rev != 42 {
		t.Fatalf("%q %d %v", key, rev, err)
	}
	for _, bad := range []string{
		encodeContinue("/core/pods/../secrets/x", "", 1), // escapes the prefix
		encodeContinue(podPrefix+"x", podPrefix, 0),      // no revision
		encodeContinue(podPrefix+"x", podPrefix, -2),     // neither a revision nor "latest"
	} {
		if _, _, err := decodeContinue(bad, podPrefix); !apierrors.IsBadRequest(err) {
			t.Fatalf("token %q: err = %v", bad, err)
		}
	}
}

func TestNotReadyAnswers429(t *testing.T) {
	store := openStore(t)
	c, err := New(Config{Store: store, Prefix: podPrefix, NewFunc: func() runtime.Object { return &corev1.Pod{} }, Decode: newPodCodec(t).decode, ReadWaitTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := c.Get(context.Background(), podKey("a", "b"), "0"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("err = %v, want 429", err)
	}
}

// A cluster-scoped resource answers a metadata.name selector (a kubelet
// listing its own Node) from one key.
func TestClusterScopedNameList(t *testing.T) {
	const prefix = "/core/nodes/"
	e := newEnv(t, func(c *Config) { c.Prefix, c.ClusterScoped = prefix, true })
	var last int64
	for _, name := range []string{"node-1", "node-10", "node-2"} {
		rev, err := e.store.Create(e.ctx, prefix+name, e.codec.encode(t, newPod("", name, "", nil)))
		if err != nil {
			t.Fatal(err)
		}
		last = rev
	}
	e.waitRev(last)
	for _, name := range []string{"node-1", "node-10", "node-3"} {
		got, _, err := e.list(ListOptions{Field: fields.OneTermEqualSelector("metadata.name", name)})
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if name == "node-3" {
			want = 0
		}
		if len(got) != want || (want == 1 && names(got)[0] != "/"+name) {
			t.Fatalf("%s: got %v", name, got)
		}
	}
}

// HasNamespace finds a namespace's objects without a list, and not those
// of a namespace whose name extends it.
func TestHasNamespace(t *testing.T) {
	e := newEnv(t, nil)
	e.create(newPod("ab", "p", "", nil))
	rev := e.create(newPod("c", "p", "", nil))
	e.waitRev(rev)
	for ns, want := range map[string]bool{"ab": true, "c": true, "a": false, "b": false, "abc": false, "": false, "d": false} {
		has, ok := e.c.HasNamespace(ns)
		if !ok || has != want {
			t.Errorf("HasNamespace(%q) = %v, %v; want %v, true", ns, has, ok, want)
		}
	}
	rev = e.delete("c", "p")
	e.waitRev(rev)
	if has, _ := e.c.HasNamespace("c"); has {
		t.Error("HasNamespace after the last object's deletion")
	}
	store := openStore(t)
	c, err := New(Config{Store: store, Prefix: podPrefix, NewFunc: func() runtime.Object { return &corev1.Pod{} }, Decode: newPodCodec(t).decode})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, ok := c.HasNamespace("ab"); ok {
		t.Error("a cache not ready answered")
	}
}

// A continue token dies when the store compacts its revision away, even
// while the cache's window still holds it: upstream's 410, with a token
// for the rest of the list at the latest revision.
func TestContinueAfterCompaction(t *testing.T) {
	e := newEnv(t, nil)
	var last int64
	for i := range 4 {
		last = e.create(newPod("ns", fmt.Sprintf("p%d", i), "n1", nil))
	}
	e.waitRev(last)
	_, first, err := e.list(ListOptions{Limit: 2})
	if err != nil || first.Continue == "" {
		t.Fatalf("%+v %v", first, err)
	}
	if _, _, err := e.list(ListOptions{Limit: 2, Continue: first.Continue}); err != nil {
		t.Fatalf("continue before compaction: %v", err)
	}
	last = e.update(newPod("ns", "p0", "n2", nil))
	e.waitRev(last)
	if err := e.store.Compact(e.ctx, last); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.list(ListOptions{Limit: 2, Continue: first.Continue})
	var status apierrors.APIStatus
	if !apierrors.IsResourceExpired(err) || !errors.As(err, &status) || status.Status().ListMeta.Continue == "" {
		t.Fatalf("continue after compaction: err = %v, want 410 with an inconsistent continue token", err)
	}
	objs, page, err := e.list(ListOptions{Limit: 2, Continue: status.Status().ListMeta.Continue})
	if err != nil || !slices.Equal(names(objs), []string{"ns/p2", "ns/p3"}) || page.ResourceVersion != fmt.Sprint(last) {
		t.Fatalf("inconsistent continue: %v at %s, %v; want ns/p2, ns/p3 at %d", names(objs), page.ResourceVersion, err, last)
	}
}
