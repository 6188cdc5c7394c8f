package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
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

// formatExample is one record of FORMAT.md's worked examples: its Pebble
// key and value, as the store's own encoders write them.
type formatExample struct {
	key, value []byte
}

// formatExamples are FORMAT.md's worked examples, by name: the store's
// life in the document (a pod created at revision 5, updated at 6,
// deleted at 7, a checkpoint at 6) plus an update that repaired a damaged
// value, written through the real encoders.
func formatExamples() map[string]formatExample {
	const key = "/registry/pods/ns/a"
	hist := func(ev storage.Event) formatExample {
		return formatExample{historyKey(ev.Revision), encodeHistory(ev)}
	}
	keyLog := func(rev int64, typ storage.EventType, create int64) formatExample {
		b := make([]byte, keyLogLen(key))
		putKeyLog(b, rev, typ, create, key)
		return formatExample{keyLogKey(rev), b}
	}
	meta := func(k string, v int64) formatExample { return formatExample{[]byte(k), encodeMeta(k, v)} }
	ckKey, ckRec := checkpointRecord(6, []byte(key), keyMeta{mod: 6, create: 5})
	return map[string]formatExample{
		"history-create":  hist(storage.Event{Type: storage.EventPut, Key: key, Value: []byte("v1"), Revision: 5, CreateRevision: 5}),
		"history-update":  hist(storage.Event{Type: storage.EventPut, Key: key, Value: []byte("v2"), Revision: 6, CreateRevision: 5, PrevModRevision: 5}),
		"history-delete":  hist(storage.Event{Type: storage.EventDelete, Key: key, Revision: 7, CreateRevision: 5, PrevModRevision: 6}),
		"history-repair":  hist(storage.Event{Type: storage.EventPut, Key: key, Value: []byte("v9"), Revision: 12, CreateRevision: 10}),
		"keylog-create":   keyLog(5, storage.EventPut, 5),
		"keylog-delete":   keyLog(7, storage.EventDelete, 5),
		"retire-update":   {retireKey(6), encodeRetire(6, 5, 0)},
		"retire-delete":   {retireKey(7), encodeRetire(7, 6, retireSelf)},
		"checkpoint":      {ckKey, ckRec},
		"meta-current":    meta(metaCurrentKey, 7),
		"meta-compacted":  meta(metaCompactedKey, 5),
		"meta-checkpoint": meta(metaCheckpointKey, 6),
		"meta-format":     meta(metaFormatKey, formatVersion),
	}
}

// TestFormatDocument: every worked example in FORMAT.md is byte for byte
// what the encoders write, its checksum is the one the document
// describes, and every example formatExamples names is in the document.
func TestFormatDocument(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	documented, err := parseFormatExamples(string(doc))
	if err != nil {
		t.Fatalf("FORMAT.md: %v", err)
	}
	want := formatExamples()
	for name, got := range documented {
		w, ok := want[name]
		if !ok {
			t.Errorf("FORMAT.md has example %q, which formatExamples does not write", name)
			continue
		}
		if !bytes.Equal(got.key, w.key) || !bytes.Equal(got.value, w.value) {
			t.Errorf("FORMAT.md example %q:\n  key   % x\n  value % x\nthe encoders write:\n  key   % x\n  value % x", name, got.key, got.value, w.key, w.value)
		}
		// The checksum rule, computed independently of checksum().
		if len(got.value) < 4 || crc32.Checksum(append(slices.Clone(got.key), got.value[4:]...), crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(got.value) {
			t.Errorf("FORMAT.md example %q: its first 4 bytes are not CRC-32C(key ‖ value[4:])", name)
		}
	}
	for name := range want {
		if _, ok := documented[name]; !ok {
			t.Errorf("FORMAT.md has no example %q", name)
		}
	}
}

// parseFormatExamples reads FORMAT.md's worked examples: fenced blocks
// opened by "```hex example=<name>", whose lines are hex bytes, each
// optionally after "key" or "value" (which start that part of the record)
// and before a "#" comment.
func parseFormatExamples(doc string) (map[string]formatExample, error) {
	out := map[string]formatExample{}
	var (
		name string
		part *[]byte
		ex   formatExample
	)
	for n, line := range strings.Split(doc, "\n") {
		switch {
		case name == "" && strings.HasPrefix(line, "```hex example="):
			name = strings.TrimPrefix(line, "```hex example=")
			if _, dup := out[name]; dup || name == "" {
				return nil, fmt.Errorf("line %d: example %q again", n+1, name)
			}
			ex, part = formatExample{}, nil
		case name != "" && strings.HasPrefix(line, "```"):
			if len(ex.key) == 0 || len(ex.value) == 0 {
				return nil, fmt.Errorf("example %q lacks a key or a value", name)
			}
			out[name], name = ex, ""
		case name != "":
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			for _, f := range strings.Fields(line) {
				switch {
				case f == "key":
					part = &ex.key
				case f == "value":
					part = &ex.value
				case part == nil:
					return nil, fmt.Errorf("line %d: bytes before \"key\"", n+1)
				default:
					b, err := hex.DecodeString(f)
					if err != nil || len(b) != 1 {
						return nil, fmt.Errorf("line %d: %q is not a hex byte", n+1, f)
					}
					*part = append(*part, b...)
				}
			}
		}
	}
	if name != "" {
		return nil, fmt.Errorf("example %q is not closed", name)
	}
	return out, nil
}

// TestFormatDocumentStore: the store itself, writing the life of
// FORMAT.md's examples through its writer, checkpointer and compaction,
// leaves exactly the documented records.
func TestFormatDocumentStore(t *testing.T) {
	ctx := context.Background()
	const key = "/registry/pods/ns/a"
	want := formatExamples()
	dir := t.TempDir()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	check := func(names ...string) {
		t.Helper()
		for _, name := range names {
			w := want[name]
			v, closer, err := s.db.Get(w.key)
			if err != nil {
				t.Fatalf("%s: reading % x: %v", name, w.key, err)
			}
			if !bytes.Equal(v, w.value) {
				t.Errorf("%s: the store wrote % x, FORMAT.md shows % x", name, v, w.value)
			}
			closer.Close()
		}
	}
	must := func(rev int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	filler := func(n int) {
		for range n {
			must(s.Create(ctx, fmt.Sprintf("/registry/pods/other/%d", s.rev.Load()+1), []byte("x")))
		}
	}
	filler(4)
	if rev := must(s.Create(ctx, key, []byte("v1"))); rev != 5 {
		t.Fatalf("create at %d, want 5", rev)
	}
	must(s.Update(ctx, key, []byte("v2"), 5))
	check("history-create", "keylog-create", "history-update", "retire-update")
	if err := s.read(ctx, func() error { return s.checkpoint(ctx) }); err != nil {
		t.Fatal(err)
	}
	check("checkpoint", "meta-checkpoint")
	if _, rev, err := s.Delete(ctx, key, 6); err != nil || rev != 7 {
		t.Fatalf("delete: %d, %v", rev, err)
	}
	check("history-delete", "keylog-delete", "retire-delete", "meta-current", "meta-format")
	if err := s.Compact(ctx, 5); err != nil {
		t.Fatal(err)
	}
	check("meta-compacted")

	// The repair: created at 10, its value at 11 damaged, replaced at 12.
	filler(2)
	must(s.Create(ctx, key, []byte("v8")))
	must(s.Update(ctx, key, []byte("v8"), 10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rewrite(t, dir, historyKey(11), flipLast)
	if s, err = Open(ctx, Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if rev := must(s.Update(ctx, key, []byte("v9"), 11)); rev != 12 {
		t.Fatalf("repair at %d, want 12", rev)
	}
	check("history-repair")
}
