package encryption

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Wrap returns the store gr's objects are to be read and written through:
// st itself when the configuration does not encrypt gr (nor read it
// encrypted), else a Store over st with gr's providers.
func (c *Config) Wrap(gr schema.GroupResource, st storage.Store) storage.Store {
	r := c.rule(gr)
	if r == nil || r.onlyIdentity {
		return st
	}
	return &Store{Store: st, t: r.transformer}
}

// Store is a storage.Store whose values are encrypted at rest: it
// encrypts on Create and Update with the first provider and decrypts
// every value it returns (Get, List, Delete, conflicts, watch events) with
// whichever provider's prefix the value carries.
//
// A value no provider decrypts (its key was removed from the
// configuration, or it was damaged) fails a Get with storage.ErrCorrupt
// naming the key; in a List or a watch event it is passed on as stored,
// still encrypted, so that one such value does not fail the list a cache
// fills from: the decoder then refuses it, and the cache answers reads of
// that key with an error naming it (see DescribeUndecryptable).
//
// Close closes the underlying store: a Store shares it with other
// resources and must not be closed on its own.
type Store struct {
	storage.Store
	t value.Transformer
}

func (s *Store) encrypt(ctx context.Context, key string, v []byte) ([]byte, error) {
	out, err := s.t.TransformToStorage(ctx, v, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("encrypting %s: %w", key, err)
	}
	return out, nil
}

func (s *Store) decrypt(ctx context.Context, key string, rev int64, v []byte) ([]byte, error) {
	out, _, err := s.decryptStale(ctx, key, rev, v)
	return out, err
}

// decryptStale is decrypt, and whether v was stored by a provider or key
// other than the one that writes now (upstream's "stale").
func (s *Store) decryptStale(ctx context.Context, key string, rev int64, v []byte) ([]byte, bool, error) {
	if v == nil {
		return nil, false, nil
	}
	out, stale, err := s.t.TransformFromStorage(ctx, v, value.DefaultContext(key))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s at revision %d does not decrypt: %v", storage.ErrCorrupt, key, rev, err)
	}
	return out, stale, nil
}

// decryptOrKeep is decrypt for lists and events: the value as stored when
// it does not decrypt.
func (s *Store) decryptOrKeep(ctx context.Context, key string, v []byte) []byte {
	out, err := s.decrypt(ctx, key, 0, v)
	if err != nil {
		return v
	}
	return out
}

func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, _, err := s.GetStale(ctx, key)
	return kv, err
}

// GetStale is Get, and whether the value is due for a rewrite: stored by
// a provider or key that no longer writes. A writer rewrites such a value
// even when the object is unchanged, which is how rewriting every object
// rotates keys.
func (s *Store) GetStale(ctx context.Context, key string) (storage.KeyValue, bool, error) {
	kv, err := s.Store.Get(ctx, key)
	if err != nil {
		return kv, false, err
	}
	var stale bool
	if kv.Value, stale, err = s.decryptStale(ctx, kv.Key, kv.ModRevision, kv.Value); err != nil {
		return storage.KeyValue{}, false, err
	}
	return kv, stale, nil
}

func (s *Store) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	kvs, rev, err := s.Store.List(ctx, prefix)
	if err != nil {
		return nil, 0, err
	}
	for i := range kvs {
		kvs[i].Value = s.decryptOrKeep(ctx, kvs[i].Key, kvs[i].Value)
	}
	return kvs, rev, nil
}

func (s *Store) Create(ctx context.Context, key string, v []byte) (int64, error) {
	enc, err := s.encrypt(ctx, key, v)
	if err != nil {
		return 0, err
	}
	return s.Store.Create(ctx, key, enc)
}

func (s *Store) Update(ctx context.Context, key string, v []byte, expected int64) (int64, error) {
	enc, err := s.encrypt(ctx, key, v)
	if err != nil {
		return 0, err
	}
	rev, err := s.Store.Update(ctx, key, enc, expected)
	return rev, s.decryptConflict(ctx, err)
}

func (s *Store) Delete(ctx context.Context, key string, expected int64) (storage.KeyValue, int64, error) {
	kv, rev, err := s.Store.Delete(ctx, key, expected)
	if err != nil {
		return kv, rev, s.decryptConflict(ctx, err)
	}
	kv.Value = s.decryptOrKeep(ctx, kv.Key, kv.Value)
	return kv, rev, nil
}

// decryptConflict decrypts the current value a ConflictError carries, which
// callers retry with.
func (s *Store) decryptConflict(ctx context.Context, err error) error {
	var ce *storage.ConflictError
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Current.Value = s.decryptOrKeep(ctx, ce.Current.Key, ce.Current.Value)
	return &out
}

func (s *Store) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	w, err := s.Store.Watch(ctx, prefix, from)
	if err != nil {
		return nil, err
	}
	dw := &watcher{in: w, out: make(chan storage.Event), done: make(chan struct{})}
	go dw.run(ctx, s)
	return dw, nil
}

// watcher decrypts a watch's events on their way to the consumer. Its
// goroutine ends when the underlying watch's channel closes (which Stop
// and the context both cause) and is not blocked by a consumer that
// stopped reading.
type watcher struct {
	in       storage.Watcher
	out      chan storage.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *watcher) run(ctx context.Context, s *Store) {
	defer close(w.out)
	for ev := range w.in.Events() {
		if ev.Value != nil {
			ev.Value = s.decryptOrKeep(ctx, ev.Key, ev.Value)
		}
		if ev.PrevValue != nil {
			ev.PrevValue = s.decryptOrKeep(ctx, ev.Key, ev.PrevValue)
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *watcher) Events() <-chan storage.Event { return w.out }
func (w *watcher) RequestProgress()             { w.in.RequestProgress() }
func (w *watcher) Err() error                   { return w.in.Err() }

func (w *watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

// DescribeUndecryptable explains a stored value that failed to decode
// because it is still encrypted — written with a provider or key the
// configuration no longer has, or by a server with encryption while this
// one has none — naming the provider and key its prefix records; "" for
// any other value.
func DescribeUndecryptable(v []byte) string {
	const max = len(EncryptedPrefix) + 64
	if len(v) < len(EncryptedPrefix) || string(v[:len(EncryptedPrefix)]) != EncryptedPrefix {
		return ""
	}
	// k8s:enc:<provider>:v1:<key name>:<ciphertext>
	head := v
	if len(head) > max {
		head = head[:max]
	}
	colons, end := 0, len(head)
	for i, b := range head {
		if b == ':' {
			colons++
			if colons == 5 {
				end = i + 1
				break
			}
		}
	}
	return fmt.Sprintf("the stored value is encrypted (%s) and none of the configured encryption providers decrypts it", printable(head[:end]))
}

// printable keeps a prefix from a damaged value readable in an error.
func printable(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out = append(out, c)
	}
	return string(out)
}
