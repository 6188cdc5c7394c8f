package embedded

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// rawStore writes records straight into a fresh Pebble database in a new
// directory, as some other version of the store might have left it.
func rawStore(t *testing.T, records map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{discardLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range records {
		if err := db.Set([]byte(k), v, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenRefusesOtherFormats: a store in any format but formatVersion is
// refused, with an error naming the directory, the format found and the
// format read, and saying what to do; the store is left as it was.
func TestOpenRefusesOtherFormats(t *testing.T) {
	current := encodeMeta(metaCurrentKey, 11)
	for _, tc := range []struct {
		name    string
		format  int64 // 0: no m/format record
		advice  string
		records map[string][]byte
	}{
		{"format 0, no format record", 0, "predates Myriad's first release", map[string][]byte{metaCurrentKey: current, "k/registry/pods/ns/a": []byte("a value")}},
		{"format 1", 1, "predates Myriad's first release", map[string][]byte{metaCurrentKey: current, metaFormatKey: encodeMeta(metaFormatKey, 1)}},
		{"format 2", 2, "predates Myriad's first release", map[string][]byte{metaCurrentKey: current, metaFormatKey: encodeMeta(metaFormatKey, 2), "i/registry/pods/ns/a": make([]byte, 20)}},
		{"a future format", 4, "written by a newer Myriad", map[string][]byte{metaCurrentKey: current, metaFormatKey: encodeMeta(metaFormatKey, 4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := rawStore(t, tc.records)
			s, err := Open(context.Background(), Options{Dir: dir, Logger: discardLogger()})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Dir != dir || fe.Found != tc.format || fe.Supported != formatVersion {
				t.Fatalf("Open: %v (%#v), want a FormatError for format %d in %s", err, fe, tc.format, dir)
			}
			msg := err.Error()
			for _, want := range []string{dir, "in format " + strconv.FormatInt(tc.format, 10), "reads only format 3", tc.advice, "start from an empty directory"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			// Refused before anything was written.
			db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{discardLogger()}})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got, err := readMeta(db, metaFormatKey); err != nil || got != tc.format {
				t.Fatalf("format record after the refusal: %d, %v; want %d", got, err, tc.format)
			}
		})
	}
}

// TestNewStoreFormat: a new store records formatVersion before anything
// else, reopens, and a damaged format record is corruption.
func TestNewStoreFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if format, err := readMeta(s.db, metaFormatKey); err != nil || format != formatVersion {
		t.Fatalf("new store's format: %d, %v", format, err)
	}
	if _, err := s.Create(ctx, "/k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	if kv, err := s.Get(ctx, "/k"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("Get after reopening: %q, %v", kv.Value, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	rewrite(t, dir, []byte(metaFormatKey), flipLast)
	if s, err := Open(ctx, Options{Dir: dir, Logger: discardLogger()}); !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), metaFormatKey) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open with a damaged format record: %v, want ErrCorrupt naming %s", err, metaFormatKey)
	}
}
