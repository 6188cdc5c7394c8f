package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// crashChildEnv switches the test binary into the crash test's child mode:
// its value is the store directory to write into until killed.
const crashChildEnv = "MYRIAD_EMBEDDED_CRASH_CHILD_DIR"

func valueHash(v []byte) uint64 {
	h := fnv.New64a()
	h.Write(v)
	return h.Sum64()
}

// crashChild writes under load from many goroutines and prints one line per
// acknowledged write, "ack <key> <revision> <hash>", after the store returned.
// Each goroutine owns its keys and updates them with CAS, so the parent
// knows the order of each key's writes. It runs until it is killed (with a
// safety exit in case the parent died).
func crashChild(dir string) {
	s, err := Open(context.Background(), Options{Dir: dir, Logger: discardLogger(), CheckpointWrites: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	base, _ := s.CurrentRevision(context.Background())
	fmt.Printf("open %d\n", base)
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(base)))
			revs := map[string]int64{}
			for i := 0; ; i++ {
				key := fmt.Sprintf("/crash/%02d/%d", g, rng.IntN(8))
				val := make([]byte, 16+rng.IntN(4096))
				for j := range val {
					val[j] = byte(rng.Uint32())
				}
				var (
					rev int64
					err error
				)
				if r, ok := revs[key]; ok {
					rev, err = s.Update(context.Background(), key, val, r)
				} else {
					rev, err = s.Create(context.Background(), key, val)
					if errors.Is(err, storage.ErrExists) { // created in an earlier life
						var kv storage.KeyValue
						if kv, err = s.Get(context.Background(), key); err == nil {
							rev, err = s.Update(context.Background(), key, val, kv.ModRevision)
						}
					}
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "write:", err)
					os.Exit(3)
				}
				revs[key] = rev
				// One write call per line (well under PIPE_BUF), so the
				// parent never sees a torn line except at the very end.
				outMu.Lock()
				fmt.Fprintf(out, "ack %s %d %d\n", key, rev, valueHash(val))
				out.Flush()
				outMu.Unlock()
			}
		}()
	}
	time.AfterFunc(2*time.Minute, func() { os.Exit(4) })
	wg.Wait()
}

type ack struct {
	rev  int64
	hash uint64
}

// TestCrashRecovery SIGKILLs a child process mid-load, twice, and checks
// after each kill that every acknowledged write survived, that the store is
// internally consistent, and that revisions keep increasing.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	acked := map[string][]ack{} // per key, in acknowledgement order
	var lastMax int64
	for round := range 2 {
		base, acks := runCrashChild(t, dir, 4000)
		if base < lastMax {
			t.Fatalf("round %d: reopened at revision %d, below the acknowledged %d", round, base, lastMax)
		}
		for _, l := range acks {
			acked[l.key] = append(acked[l.key], l.ack)
			if l.rev <= base {
				t.Fatalf("round %d: write acknowledged at revision %d, not after the open revision %d", round, l.rev, base)
			}
			lastMax = max(lastMax, l.rev)
		}
		t.Logf("round %d: opened at %d, %d acknowledged writes, max revision %d", round, base, len(acks), lastMax)
		verifyStore(t, dir, acked, lastMax)
	}
}

type ackLine struct {
	key string
	ack
}

// runCrashChild starts the child on dir, kills it with SIGKILL once it has
// acknowledged n writes, and returns the revision it opened at and every
// acknowledgement it completed.
func runCrashChild(t *testing.T, dir string, n int) (int64, []ackLine) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	r := bufio.NewReader(stdout)
	var (
		base  int64 = -1
		lines []ackLine
	)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break // anything without a newline was cut by the kill
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "open":
			base, _ = strconv.ParseInt(f[1], 10, 64)
		case len(f) == 4 && f[0] == "ack":
			rev, err1 := strconv.ParseInt(f[2], 10, 64)
			hash, err2 := strconv.ParseUint(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad child line %q", line)
			}
			lines = append(lines, ackLine{f[1], ack{rev, hash}})
		default:
			t.Fatalf("bad child line %q", line)
		}
		if len(lines) == n && !killed {
			// Kill mid-load; keep reading what it wrote before dying.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited before being killed: %v", err)
	}
	if base < 0 {
		t.Fatal("child never reported its open revision")
	}
	return base, lines
}

// verifyStore reopens dir and checks it against the acknowledgements:
// every record decodes, the history is contiguous up to m/current, replaying
// it reproduces exactly the latest records, each key's latest acknowledged
// write is present at its revision or superseded by a later one, each
// acknowledged write is in the history with its hash, and a new write gets a
// newer revision.
func verifyStore(t *testing.T, dir string, acked map[string][]ack, maxAcked int64) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer s.Close()
	cur, _ := s.CurrentRevision(ctx)
	if cur < maxAcked {
		t.Fatalf("reopened at revision %d, below the acknowledged %d", cur, maxAcked)
	}
	// Full scan of the raw records.
	type state struct {
		rev, create int64
		hash        uint64
	}
	replayed := map[string]state{}
	history := map[int64]storage.Event{}
	err = s.read(ctx, func() error {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{historyPrefix}, UpperBound: []byte{historyPrefix + 1}})
		if err != nil {
			return err
		}
		defer it.Close()
		want := int64(1)
		for ok := it.First(); ok; ok = it.Next() {
			ev, err := decodeHistory(it.Key(), it.Value())
			if err != nil {
				return err
			}
			if ev.Revision != want {
				return fmt.Errorf("history gap: revision %d, want %d", ev.Revision, want)
			}
			want++
			history[ev.Revision] = ev
			if prev, ok := replayed[ev.Key]; ok {
				// An update or delete: its retire record names the
				// write it replaced.
				v, closer, err := s.db.Get(retireKey(ev.Revision))
				if err != nil {
					return fmt.Errorf("retire record of revision %d: %w", ev.Revision, err)
				}
				_, p, _, err := decodeRetire(retireKey(ev.Revision), v)
				closer.Close()
				if err != nil || p != prev.rev {
					return fmt.Errorf("retire record of revision %d names %d (%v), want %d", ev.Revision, p, err, prev.rev)
				}
			}
			if ev.Type == storage.EventPut {
				replayed[ev.Key] = state{ev.Revision, ev.CreateRevision, valueHash(ev.Value)}
			} else {
				delete(replayed, ev.Key)
			}
		}
		if want-1 != cur {
			return fmt.Errorf("history ends at %d but the current revision is %d", want-1, cur)
		}
		return it.Error()
	})
	if err != nil {
		t.Fatal(err)
	}
	list, listRev, err := s.List(ctx, "")
	if err != nil {
		t.Fatalf("list after crash: %v", err)
	}
	if listRev != cur || len(list) != len(replayed) {
		t.Fatalf("list: %d keys at %d; history replay: %d keys at %d", len(list), listRev, len(replayed), cur)
	}
	for _, kv := range list {
		st := replayed[kv.Key]
		if st.rev != kv.ModRevision || st.create != kv.CreateRevision || st.hash != valueHash(kv.Value) {
			t.Fatalf("%q: latest record %d/%d disagrees with history replay %+v", kv.Key, kv.ModRevision, kv.CreateRevision, st)
		}
	}
	// The checkpoint and key log, replayed, agree with the history replay
	// (List above read the index Open built from them; this is them as
	// they are now).
	ckpt, err := readMeta(s.db, metaCheckpointKey)
	if err != nil {
		t.Fatal(err)
	}
	index, err := loadKeyIndex(s.db, cur, 0, ckpt, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if index.Len() != len(list) {
		t.Fatalf("key log has %d keys, history %d", index.Len(), len(list))
	}
	for _, kv := range list {
		if m, _ := index.get(kv.Key); m.mod != kv.ModRevision || m.create != kv.CreateRevision {
			t.Fatalf("%q: key log %+v, history %d/%d", kv.Key, m, kv.ModRevision, kv.CreateRevision)
		}
	}
	for key, acks := range acked {
		for _, a := range acks {
			ev, ok := history[a.rev]
			if !ok || ev.Key != key || valueHash(ev.Value) != a.hash {
				t.Fatalf("acknowledged write %q@%d (hash %x) is not in the history: %+v", key, a.rev, a.hash, ev)
			}
		}
		last := acks[len(acks)-1]
		kv, err := s.Get(ctx, key)
		if err != nil {
			t.Fatalf("acknowledged key %q: %v", key, err)
		}
		if kv.ModRevision < last.rev || (kv.ModRevision == last.rev && valueHash(kv.Value) != last.hash) {
			t.Fatalf("acknowledged %q@%d: found revision %d", key, last.rev, kv.ModRevision)
		}
	}
	rev, err := s.Create(ctx, fmt.Sprintf("/probe/%d", cur), nil)
	if err != nil || rev != cur+1 {
		t.Fatalf("first write after recovery: revision %d (%v), want %d", rev, err, cur+1)
	}
}
