package encryption

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

var secrets = schema.GroupResource{Resource: "secrets"}

func openStore(t testing.TB) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(context.Background(), embedded.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func mustLoad(t testing.TB, providers string) *Config {
	t.Helper()
	c, err := Load([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func aescbc(name, secret string) string {
	return "  - aescbc:\n      keys: [{name: " + name + ", secret: " + secret + "}]\n"
}

const plaintext = "the-password-is-hunter2"

// TestProvidersRoundTrip: each provider stores upstream's prefix and no
// plaintext, and reads back what was written.
func TestProvidersRoundTrip(t *testing.T) {
	cases := []struct{ name, providers, prefix string }{
		{"aescbc", aescbc("key1", key32), "k8s:enc:aescbc:v1:key1:"},
		{"aescbc 16-byte key", aescbc("short", key16), "k8s:enc:aescbc:v1:short:"},
		{"aesgcm", "  - aesgcm:\n      keys: [{name: g1, secret: " + key32 + "}]\n", "k8s:enc:aesgcm:v1:g1:"},
		{"secretbox", "  - secretbox:\n      keys: [{name: s1, secret: " + key32 + "}]\n", "k8s:enc:secretbox:v1:s1:"},
		{"identity first", "  - identity: {}\n" + aescbc("key1", key32), ""},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := openStore(t)
			st := mustLoad(t, tc.providers).Wrap(secrets, raw)
			key := "/core/secrets/default/s"
			if _, err := st.Create(ctx, key, []byte(plaintext)); err != nil {
				t.Fatal(err)
			}
			stored, err := raw.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prefix == "" {
				if string(stored.Value) != plaintext {
					t.Fatalf("identity stored %q", stored.Value)
				}
			} else {
				if !bytes.HasPrefix(stored.Value, []byte(tc.prefix)) {
					t.Fatalf("stored value %q lacks prefix %q", stored.Value, tc.prefix)
				}
				if bytes.Contains(stored.Value, []byte(plaintext)) {
					t.Fatal("plaintext in the raw store")
				}
			}
			got, err := st.Get(ctx, key)
			if err != nil || string(got.Value) != plaintext {
				t.Fatalf("Get = %q, %v", got.Value, err)
			}
			kvs, _, err := st.List(ctx, "/core/secrets/")
			if err != nil || len(kvs) != 1 || string(kvs[0].Value) != plaintext {
				t.Fatalf("List = %v, %v", kvs, err)
			}
		})
	}
}

// TestAuthenticatedKey: an aesgcm value copied to another key does not
// decrypt there (the key is the authenticated data, as upstream).
func TestAuthenticatedKey(t *testing.T) {
	ctx := context.Background()
	raw := openStore(t)
	st := mustLoad(t, "  - aesgcm:\n      keys: [{name: g1, secret: "+key32+"}]\n").Wrap(secrets, raw)
	if _, err := st.Create(ctx, "/core/secrets/a/x", []byte(plaintext)); err != nil {
		t.Fatal(err)
	}
	kv, _ := raw.Get(ctx, "/core/secrets/a/x")
	if _, err := raw.Create(ctx, "/core/secrets/b/x", kv.Value); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "/core/secrets/b/x"); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("moved value: err = %v, want ErrCorrupt", err)
	}
}

// TestRotation: a new key first still reads the old key's values;
// rewriting moves them to the new key; a configuration without the old
// key then fails reads of values left under it with a clear error.
func TestRotation(t *testing.T) {
	ctx := context.Background()
	raw := openStore(t)
	old := mustLoad(t, aescbc("key1", key32)).Wrap(secrets, raw)
	for _, k := range []string{"/core/secrets/ns/a", "/core/secrets/ns/b"} {
		if _, err := old.Create(ctx, k, []byte(plaintext)); err != nil {
			t.Fatal(err)
		}
	}
	rotated := mustLoad(t, aescbc("key2", key32b)+aescbc("key1", key32)).Wrap(secrets, raw)
	kv, err := rotated.Get(ctx, "/core/secrets/ns/a")
	if err != nil || string(kv.Value) != plaintext {
		t.Fatalf("old value under the rotated config: %q %v", kv.Value, err)
	}
	// The rewrite (kubectl replace) of a only.
	if _, err := rotated.Update(ctx, "/core/secrets/ns/a", kv.Value, kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	stored, _ := raw.Get(ctx, "/core/secrets/ns/a")
	if !bytes.HasPrefix(stored.Value, []byte("k8s:enc:aescbc:v1:key2:")) {
		t.Fatalf("rewritten value %q not under key2", stored.Value[:30])
	}
	onlyNew := mustLoad(t, aescbc("key2", key32b)).Wrap(secrets, raw)
	if kv, err := onlyNew.Get(ctx, "/core/secrets/ns/a"); err != nil || string(kv.Value) != plaintext {
		t.Fatalf("rewritten value under key2 only: %q %v", kv.Value, err)
	}
	_, err = onlyNew.Get(ctx, "/core/secrets/ns/b")
	if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), "/core/secrets/ns/b") || !strings.Contains(err.Error(), "no matching key") {
		t.Fatalf("value under a removed key: err = %v", err)
	}
	// A list still answers, with the undecryptable value as stored so that
	// the decoder reports it per key.
	kvs, _, err := onlyNew.List(ctx, "/core/secrets/")
	if err != nil || len(kvs) != 2 {
		t.Fatalf("List: %v %v", kvs, err)
	}
	if string(kvs[0].Value) != plaintext {
		t.Fatalf("decryptable entry: %q", kvs[0].Value)
	}
	msg := DescribeUndecryptable(kvs[1].Value)
	if !strings.Contains(msg, "k8s:enc:aescbc:v1:key1:") {
		t.Fatalf("DescribeUndecryptable = %q", msg)
	}
	if DescribeUndecryptable([]byte(plaintext)) != "" || DescribeUndecryptable(nil) != "" {
		t.Fatal("DescribeUndecryptable describes a plain value")
	}
}

// TestWatchAndConflict: watch events and a conflict's current value come
// back decrypted.
func TestWatchAndConflict(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	raw := openStore(t)
	st := mustLoad(t, aescbc("key1", key32)).Wrap(secrets, raw)
	w, err := st.Watch(ctx, "/core/secrets/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev, err := st.Create(ctx, "/core/secrets/ns/a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, "/core/secrets/ns/a", []byte("v2"), rev); err != nil {
		t.Fatal(err)
	}
	_, err = st.Update(ctx, "/core/secrets/ns/a", []byte("v3"), rev)
	var ce *storage.ConflictError
	if !errors.As(err, &ce) || string(ce.Current.Value) != "v2" {
		t.Fatalf("conflict: %v (current %q)", err, ce)
	}
	kv, _, err := st.Delete(ctx, "/core/secrets/ns/a", 0)
	if err != nil || string(kv.Value) != "v2" {
		t.Fatalf("Delete = %q, %v", kv.Value, err)
	}
	want := []string{"PUT v1 <nil>", "PUT v2 v1", "DELETE  v2"}
	for i := 0; i < len(want); i++ {
		select {
		case ev := <-w.Events():
			prev := "<nil>"
			if ev.PrevValue != nil {
				prev = string(ev.PrevValue)
			}
			if got := ev.Type.String() + " " + string(ev.Value) + " " + prev; got != want[i] {
				t.Fatalf("event %d = %q, want %q", i, got, want[i])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not arrive", i)
		}
	}
	w.Stop()
	w.Stop()
	select {
	case _, ok := <-w.Events():
		for ok {
			_, ok = <-w.Events()
		}
	case <-time.After(10 * time.Second):
		t.Fatal("events channel not closed after Stop")
	}
}

// BenchmarkTransform is the cipher cost of one secret write (encrypt) and
// read (decrypt), 1 KiB of stored bytes, per provider.
func BenchmarkTransform(b *testing.B) {
	value := bytes.Repeat([]byte("s"), 1024)
	ctx := context.Background()
	for _, bc := range []struct{ name, providers string }{
		{"aescbc", aescbc("key1", key32)},
		{"aesgcm", "  - aesgcm:\n      keys: [{name: g1, secret: " + key32 + "}]\n"},
		{"secretbox", "  - secretbox:\n      keys: [{name: s1, secret: " + key32 + "}]\n"},
	} {
		st := mustLoad(b, bc.providers).Wrap(secrets, nil).(*Store)
		key := "/core/secrets/default/a-secret"
		b.Run(bc.name+"/encrypt", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := st.encrypt(ctx, key, value); err != nil {
					b.Fatal(err)
				}
			}
		})
		enc, _ := st.encrypt(ctx, key, value)
		b.Run(bc.name+"/decrypt", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := st.decrypt(ctx, key, 1, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
