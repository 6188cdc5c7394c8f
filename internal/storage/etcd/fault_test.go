package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

// Fault tests run on a real 3-member cluster; each takes a few seconds.

// counterWriters increments keys /ctr/<i> by compare-and-swap until stop
// closes, and reports per key the acknowledged value and how many writes
// ended with an unknown outcome.
type counterWriters struct {
	mu      sync.Mutex
	acked   map[string]int
	unknown map[string]int
	failed  int
	errs    []string
}

func runCounterWriters(t *testing.T, s *Store, keys []string, stop <-chan struct{}) (*counterWriters, *sync.WaitGroup) {
	cw := &counterWriters{acked: map[string]int{}, unknown: map[string]int{}}
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			n, rev := 0, int64(0)
			resync := func() bool {
				for {
					select {
					case <-stop:
						return false
					default:
					}
					kv, err := s.Get(ctx, key)
					if err == nil {
						n, _ = strconv.Atoi(string(kv.Value))
						rev = kv.ModRevision
						return true
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if !resync() {
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := s.Update(ctx, key, []byte(strconv.Itoa(n+1)), rev)
				cw.mu.Lock()
				switch {
				case err == nil:
					n, rev = n+1, r
					cw.acked[key] = n
				case errors.Is(err, ErrOutcomeUnknown):
					cw.unknown[key]++
				default:
					cw.failed++
					if len(cw.errs) < 5 {
						cw.errs = append(cw.errs, err.Error())
					}
				}
				cw.mu.Unlock()
				if err != nil && !resync() {
					return
				}
			}
		}()
	}
	return cw, &wg
}

// watchCounters checks, on w, that every key's values arrive exactly once
// and in order (each event's value is the previous one plus one), and
// returns the last value seen per key.
func watchCounters(t *testing.T, w storage.Watcher, until func(map[string]int) bool) map[string]int {
	t.Helper()
	seen := map[string]int{}
	deadline := time.After(60 * time.Second)
	for !until(seen) {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ev.Type == storage.EventProgress {
				continue
			}
			v, _ := strconv.Atoi(string(ev.Value))
			if v != seen[ev.Key]+1 {
				t.Fatalf("%s: event value %d after %d (duplicate or missed event) at revision %d", ev.Key, v, seen[ev.Key], ev.Revision)
			}
			seen[ev.Key] = v
		case <-deadline:
			t.Fatalf("watch did not catch up: seen %v", seen)
		}
	}
	return seen
}

// TestKillLeaderDuringWrites: the leader dies under a compare-and-swap
// write load. Every acknowledged write is there exactly once, nothing
// that failed with an unknown outcome was applied twice, and a watcher
// (on a member that does not die, and one on the member that does) sees
// every write exactly once.
func TestKillLeaderDuringWrites(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s := newTestStore(t, c, Config{RequestTimeout: 5 * time.Second})
	ctx := testContext(t, 2*time.Minute)
	var keys []string
	var start int64
	for i := range 4 {
		key := fmt.Sprintf("/ctr/%d", i)
		keys = append(keys, key)
		r, err := s.Create(ctx, key, []byte("0"))
		if err != nil {
			t.Fatal(err)
		}
		start = r
	}
	leader := c.Leader()
	// One watcher through every endpoint, one pinned to the leader: its
	// stream must break and resume once the leader is back.
	wAll, err := s.Watch(ctx, "/ctr/", start)
	if err != nil {
		t.Fatal(err)
	}
	defer wAll.Stop()
	pinned := newTestStore(t, c, Config{Prefix: s.prefix, RequestTimeout: 5 * time.Second, Endpoints: []string{c.Endpoint(leader)}})
	wPinned, err := pinned.Watch(ctx, "/ctr/", start)
	if err != nil {
		t.Fatal(err)
	}
	defer wPinned.Stop()

	stop := make(chan struct{})
	cw, wg := runCounterWriters(t, s, keys, stop)
	time.Sleep(500 * time.Millisecond)
	c.Kill(leader)
	if l := c.Leader(); l == leader {
		t.Fatalf("member %d still leads after being killed", leader)
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	c.Restart(leader)

	final := map[string]int{}
	total := 0
	for _, key := range keys {
		kv, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		final[key], _ = strconv.Atoi(string(kv.Value))
		total += final[key]
		if acked := cw.acked[key]; final[key] < acked || final[key] > acked+cw.unknown[key] {
			t.Errorf("%s = %d; acknowledged %d, unknown outcomes %d", key, final[key], acked, cw.unknown[key])
		}
	}
	t.Logf("%d increments; %d unknown outcomes, %d other failures %q", total, sumValues(cw.unknown), cw.failed, cw.errs)
	if total < 20 {
		t.Errorf("only %d increments: the load did not run", total)
	}
	caughtUp := func(seen map[string]int) bool {
		for k, v := range final {
			if seen[k] < v {
				return false
			}
		}
		return true
	}
	watchCounters(t, wAll, caughtUp)
	watchCounters(t, wPinned, caughtUp)
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestQuorumLoss: with one member of three stopped writes go on; with two
// stopped they fail within the request timeout with a clear error and
// Health says why; once quorum returns writes resume and every member
// holds the same data.
func TestQuorumLoss(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const timeout = time.Second
	s := newTestStore(t, c, Config{RequestTimeout: timeout})
	ctx := testContext(t, 2*time.Minute)
	mustCreate := func(key string) {
		t.Helper()
		if _, err := s.Create(ctx, key, []byte("v")); err != nil {
			t.Fatalf("Create(%s): %v", key, err)
		}
	}
	mustCreate("/q/a")
	leader := c.Leader()
	f1, f2 := (leader+1)%3, (leader+2)%3

	c.Stop(f1)
	for i := range 5 {
		mustCreate(fmt.Sprintf("/q/minority-%d", i))
	}
	if err := s.Health(ctx); err != nil {
		t.Fatalf("Health with a minority down: %v", err)
	}

	c.Stop(f2)
	begin := time.Now()
	_, err := s.Create(ctx, "/q/no-quorum", []byte("v"))
	took := time.Since(begin)
	if err == nil {
		t.Fatal("Create without quorum succeeded")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Create without quorum: %v, want ErrUnavailable", err)
	}
	if took > timeout+time.Second {
		t.Errorf("Create without quorum took %v, request timeout %v", took, timeout)
	}
	t.Logf("write without quorum: %v after %v", err, took.Round(time.Millisecond))
	// Reads are linearizable: they need a quorum as much as writes do.
	if _, err := s.Get(ctx, "/q/a"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get without quorum: %v, want ErrUnavailable", err)
	}
	herr := s.Health(ctx)
	if herr == nil || !strings.Contains(herr.Error(), "no leader") && !strings.Contains(herr.Error(), "did not answer") {
		t.Errorf("Health without quorum: %v, want it to say there is no leader", herr)
	}
	t.Logf("health without quorum: %v", herr)

	c.Restart(f1)
	c.Restart(f2)
	c.Leader()
	for deadline := time.Now().Add(30 * time.Second); s.Health(ctx) != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not healthy after quorum returned: %v", s.Health(ctx))
		}
	}
	mustCreate("/q/after")

	// Nothing diverged: every member serves the same keys (the write that
	// failed without quorum may or may not have been kept, but alike).
	var want string
	for i := range 3 {
		cli := memberClient(t, c, i)
		var got string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, err := cli.Get(ctx, s.prefix+"/q/", clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithKeysOnly())
			if err == nil {
				var ks []string
				for _, kv := range resp.Kvs {
					ks = append(ks, string(kv.Key))
				}
				got = strings.Join(ks, ",")
				if strings.Contains(got, "/q/after") {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d lacks /q/after: %q, %v", i, got, err)
			}
		}
		if i == 0 {
			want = got
		} else if got != want {
			t.Errorf("member %d holds %q, member 0 %q", i, got, want)
		}
	}
}

// TestCompactUnderWatcher: a watcher whose member is away while history
// is compacted ends with a CompactedError when it resumes; re-listing and
// watching from the list's revision misses nothing.
func TestCompactUnderWatcher(t *testing.T) {
	c := etcdtest.Start(t, 3)
	// Each client is given its member when made: etcd's client races
	// with its own resolver when SetEndpoints follows New at once.
	away := (c.Leader() + 1) % 3
	writer := newTestStore(t, c, Config{Endpoints: []string{c.Endpoint((away + 1) % 3)}})
	watcher := newTestStore(t, c, Config{Prefix: writer.prefix, Endpoints: []string{c.Endpoint(away)}})
	ctx := testContext(t, 2*time.Minute)

	truth := map[string]string{}
	put := func(key, value string) int64 {
		t.Helper()
		kv, err := writer.Get(ctx, key)
		var rev int64
		switch {
		case errors.Is(err, storage.ErrNotFound):
			rev, err = writer.Create(ctx, key, []byte(value))
		case err == nil:
			rev, err = writer.Update(ctx, key, []byte(value), kv.ModRevision)
		}
		if err != nil {
			t.Fatalf("write %s: %v", key, err)
		}
		truth[key] = value
		return rev
	}
	start := put("/w/a", "1")
	w, err := watcher.Watch(ctx, "/w/", start)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev := put("/w/b", "1")
	if ev := nextEvent(t, w, 20*time.Second); ev.Key != "/w/b" || ev.Revision != rev {
		t.Fatalf("got %v %q@%d, want /w/b@%d", ev.Type, ev.Key, ev.Revision, rev)
	}

	c.Stop(away)
	for i := range 10 {
		rev = put(fmt.Sprintf("/w/k%d", i), "x")
	}
	if _, _, err := writer.Delete(ctx, "/w/a", 0); err != nil {
		t.Fatal(err)
	}
	delete(truth, "/w/a")
	if err := writer.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	c.Restart(away)

	// The resumed watch cannot be served from compacted history.
	for {
		ev, ok := <-w.Events()
		if !ok {
			break
		}
		if ev.Type != storage.EventProgress {
			t.Fatalf("event %v %q@%d from compacted history", ev.Type, ev.Key, ev.Revision)
		}
	}
	var ce *storage.CompactedError
	if !errors.As(w.Err(), &ce) || ce.Compacted < rev {
		t.Fatalf("watch ended with %v, want a CompactedError at or after %d", w.Err(), rev)
	}

	// Re-list, re-watch from the list, and keep writing meanwhile.
	kvs, listRev, err := watcher.List(ctx, "/w/")
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, kv := range kvs {
		state[kv.Key] = string(kv.Value)
	}
	w2, err := watcher.Watch(ctx, "/w/", listRev)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	put("/w/b", "2")
	put("/w/c", "1")
	last := put("/w/c", "2")
	for done := false; !done; {
		ev := nextEvent(t, w2, 20*time.Second)
		switch ev.Type {
		case storage.EventPut:
			state[ev.Key] = string(ev.Value)
		case storage.EventDelete:
			delete(state, ev.Key)
		}
		done = ev.Revision >= last
	}
	if fmt.Sprint(state) != fmt.Sprint(truth) {
		t.Fatalf("after re-list and re-watch: %v, want %v", state, truth)
	}
}

func memberClient(t *testing.T, c *etcdtest.Cluster, i int) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoint(i)}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestSilentMember: one member's connections go silent without breaking.
// Reads retry on another member within the request timeout, and a watch
// whose stream sat on that member notices and resumes elsewhere, missing
// nothing.
func TestSilentMember(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const timeout = time.Second
	s := newTestStore(t, c, Config{RequestTimeout: timeout})
	ctx := testContext(t, time.Minute)
	start, err := s.Create(ctx, "/s/k", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	// The watch's stream goes to member 0, the only endpoint at first.
	silent := 0
	ws := newTestStore(t, c, Config{Prefix: s.prefix, RequestTimeout: timeout, Endpoints: []string{c.Endpoint(silent)}})
	w, err := ws.Watch(ctx, "/s/", start)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ws.cli.SetEndpoints(c.Endpoints()...)
	rev, err := s.Update(ctx, "/s/k", []byte("1"), start)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w, 10*time.Second); ev.Revision != rev {
		t.Fatalf("event at %d, want %d", ev.Revision, rev)
	}

	// Writes cannot be retried on another member (their outcome is
	// unknown once sent), so the writer keeps off the silent member.
	s.cli.SetEndpoints(c.Endpoint(1), c.Endpoint(2))
	c.Freeze(silent, true)
	defer c.Freeze(silent, false)
	// Reads: every one succeeds, some after a retry on another member;
	// so does Health.
	for i := range 10 {
		if _, err := ws.Get(ctx, "/s/k"); err != nil {
			t.Fatalf("Get %d with a silent member: %v", i, err)
		}
		if i < 3 {
			if err := ws.Health(ctx); err != nil {
				t.Fatalf("Health %d with a silent member: %v", i, err)
			}
		}
	}
	// The watch: writes go on, a progress request finds the stream dead.
	var last int64
	for i := 2; i < 5; i++ {
		if last, err = s.Update(ctx, "/s/k", []byte(strconv.Itoa(i)), rev); err != nil {
			t.Fatal(err)
		}
		rev = last
	}
	w.RequestProgress()
	want := 2
	for {
		// Each new stream may land on the silent member again (its
		// connection looks healthy until keepalive gives up on it).
		ev := nextEvent(t, w, 20*timeout)
		if ev.Type == storage.EventProgress {
			if ev.Revision >= last && want == 5 {
				break
			}
			w.RequestProgress()
			continue
		}
		if v, _ := strconv.Atoi(string(ev.Value)); v != want {
			t.Fatalf("event value %s, want %d (missed or repeated)", ev.Value, want)
		}
		want++
	}
}
