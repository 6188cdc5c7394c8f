package etcdtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestSingleMember(t *testing.T) {
	c := Start(t, 1)
	cli := c.Client(t)
	ctx := ctxTimeout(t, 20*time.Second)
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	c.Stop(0)
	c.Restart(0)
	resp, err := cli.Get(ctx, "/k")
	if err != nil {
		t.Fatalf("Get after restart: %v", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart got %v, want /k=v", resp.Kvs)
	}
}

// TestThreeMembers: a 3-member cluster elects a leader, keeps taking writes
// with one member stopped or killed, refuses them without a majority, and a
// returning member catches up.
func TestThreeMembers(t *testing.T) {
	c := Start(t, 3)
	cli := c.Client(t)
	ctx := ctxTimeout(t, 60*time.Second)
	put := func(key string) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, key, "v")
		return err
	}
	if err := put("/a"); err != nil {
		t.Fatalf("Put: %v", err)
	}

	leader := c.Leader()
	c.Kill(leader)
	if l := c.Leader(); l == leader {
		t.Fatalf("killed member %d still leader", leader)
	}
	if err := put("/b"); err != nil {
		t.Fatalf("Put with the old leader killed: %v", err)
	}
	c.Restart(leader)

	other := (c.Leader() + 1) % 3
	c.Stop(other)
	if err := put("/c"); err != nil {
		t.Fatalf("Put with one member stopped: %v", err)
	}

	// Two of three down: no quorum, the write must fail, not hang.
	third := (other + 1) % 3
	c.Stop(third)
	start := time.Now()
	err := put("/d")
	if err == nil {
		t.Fatalf("Put without quorum succeeded")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Put without quorum took %v", time.Since(start))
	}
	if !errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("test context ended: %v", err)
	}

	c.Restart(other)
	c.Restart(third)
	c.Leader()
	if err := put("/e"); err != nil {
		t.Fatalf("Put after quorum returned: %v", err)
	}
	// Every member has every acknowledged write. The write refused without
	// quorum has an unknown outcome (its proposal may sit in a member's log
	// and commit once quorum returns), but all members must agree on it.
	var dSeen []bool
	for i := range 3 {
		mc := memberClient(t, c, i)
		resp, err := mc.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithSerializable())
		if err != nil {
			t.Fatalf("member %d Get: %v", i, err)
		}
		got := map[string]bool{}
		for _, kv := range resp.Kvs {
			got[string(kv.Key)] = true
		}
		for _, k := range []string{"/a", "/b", "/c", "/e"} {
			if !got[k] && !eventually(func() bool { return has(ctx, mc, k) }) {
				t.Errorf("member %d lacks %s", i, k)
			}
		}
		dSeen = append(dSeen, got["/d"] || has(ctx, mc, "/d"))
	}
	// A member that lacks it may only lag: once one has it, all must.
	if slices.Contains(dSeen, true) {
		for i := range dSeen {
			mc := memberClient(t, c, i)
			if !dSeen[i] && !eventually(func() bool { return has(ctx, mc, "/d") }) {
				t.Errorf("members disagree on /d: %v", dSeen)
			}
		}
	}
}

func TestBlackhole(t *testing.T) {
	c := Start(t, 1)
	cli := c.Client(t)
	c.Blackhole(0, true)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := cli.Get(ctx, "/x"); err == nil {
		t.Fatalf("Get through a blackhole succeeded")
	}
	c.Blackhole(0, false)
	ctx2 := ctxTimeout(t, 20*time.Second)
	if _, err := cli.Get(ctx2, "/x"); err != nil {
		t.Fatalf("Get after the blackhole lifted: %v", err)
	}
}

func memberClient(t *testing.T, c *Cluster, i int) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Endpoint(i)}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func has(ctx context.Context, cli *clientv3.Client, key string) bool {
	resp, err := cli.Get(ctx, key, clientv3.WithSerializable())
	return err == nil && len(resp.Kvs) == 1
}

// eventually polls cond for up to 10 s: a restarted follower applies the
// log it missed asynchronously after it is ready.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
