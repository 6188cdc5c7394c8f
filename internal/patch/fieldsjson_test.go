package patch

import (
	"bytes"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// fieldsCorpus is fieldsV1 as upstream encodes it (a kubelet's Lease and
// Node status, a Deployment's containers), and encodings the scan must
// follow the decoder on: escapes, "." beside children, unknown types.
var fieldsCorpus = []string{
	`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"9c1f3f6e-0d7b-4a49-a3c4-1d7b1e2f3a4b\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`,
	`{"f:status":{"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}}}}}`,
	`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}`,
	`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:finalizers":{"v:\"kubernetes\"":{}},"f:args":{"i:0":{}}}}`,
	`{"f:a":{"x:future":{}},"f:b":{"x:future":{},"f:c":{}},"f:\u0064":{}}`,
	`{}`,
	` { "f:spec" : { "f:renewTime" : { } } } `,
}

func fieldsSet(t testing.TB, raw string) *fieldpath.Set {
	t.Helper()
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader([]byte(raw))); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return s
}

// probePaths are the set's members, their prefixes and near misses.
func probePaths(s *fieldpath.Set) []fieldpath.Path {
	var out []fieldpath.Path
	s.Iterate(func(p fieldpath.Path) {
		out = append(out, p.Copy())
		for i := 1; i < len(p); i++ {
			out = append(out, p[:i].Copy())
		}
		miss := append(p.Copy(), fieldpath.PathElement{FieldName: ptr.To("missing")})
		out = append(out, miss)
	})
	return append(out,
		fieldpath.MakePathOrDie("spec", "renewTime"),
		fieldpath.MakePathOrDie("status", "conditions", fieldpath.KeyByFields("type", "Ready"), "lastHeartbeatTime"),
		fieldpath.MakePathOrDie("status", "conditions", fieldpath.KeyByFields("type", "PIDPressure"), "lastHeartbeatTime"),
		fieldpath.MakePathOrDie("a"),
		fieldpath.MakePathOrDie("d"),
		fieldpath.MakePathOrDie("spec", "finalizers", value.NewValueInterface("kubernetes")),
		fieldpath.MakePathOrDie("spec", "args", 0),
		fieldpath.MakePathOrDie("spec", "args", 1),
	)
}

func TestFieldsHasMatchesDecodedSet(t *testing.T) {
	for _, raw := range fieldsCorpus {
		set := fieldsSet(t, raw)
		for _, p := range probePaths(set) {
			want, ok := serializePath(p)
			if !ok {
				t.Fatalf("serialize %v", p)
			}
			has, ok := fieldsHas([]byte(raw), want)
			if !ok {
				t.Errorf("%s: %v: the scan gave up on a valid encoding", raw, p)
				continue
			}
			if has != set.Has(p) {
				t.Errorf("%s: %v: scan says %v, decoded set %v", raw, p, has, set.Has(p))
			}
		}
	}
}

func TestFieldsHasGivesUp(t *testing.T) {
	want := []string{"f:spec", "f:renewTime"}
	for _, raw := range []string{
		``,
		`[]`,
		`{"f:spec":[]}`,
		`{"f:spec":{"f:renewTime":1}}`,
		`{"f:spec":{"f:renewTime":{"":{}}}}`, // a key no element could be
		`{"f:spec":{"f:renewTime":{"f:x":{}`, // cut short
		`{"f:spec" {}}`,
		`{"f:other":{},}`,
	} {
		if has, ok := fieldsHas([]byte(raw), want); ok {
			t.Errorf("%q: answered %v, want unknown", raw, has)
		}
	}
}

func TestJSONStringIs(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		is        bool
	}{
		{`f:spec`, "f:spec", true},
		{`f:spe`, "f:spec", false},
		{`f:specs`, "f:spec", false},
		{`k:{\"type\":\"Ready\"}`, `k:{"type":"Ready"}`, true},
		{`\u0066:spec`, "f:spec", true},
		{`f:\u00e9t\u00E9`, "f:été", true},
		{`f:\ud83d\ude00`, "f:😀", true},
		{`f:\n\t\/\\`, "f:\n\t/\\", true},
		{`f:\x`, "f:x", false},
		{`f:\u12`, "f:\u0012", false},
	} {
		if got := jsonStringIs([]byte(tc.raw), tc.want); got != tc.is {
			t.Errorf("jsonStringIs(%s, %q) = %v, want %v", tc.raw, tc.want, got, tc.is)
		}
	}
}

// FuzzFieldsHas checks the scan against structured-merge-diff's decoder.
// On the canonical encoding (what the encoder writes back for the decoded
// set, as every stored entry is) the scan must answer, and answer what the
// set's Has does, for the set's own paths and near misses. Anything else
// must only not crash it: duplicate keys, say, are merged by the decoder
// and not by the scan.
func FuzzFieldsHas(f *testing.F) {
	for _, raw := range fieldsCorpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		set := &fieldpath.Set{}
		decodeErr := set.FromJSON(bytes.NewReader(raw))
		canonical := false
		if decodeErr == nil {
			enc, err := set.ToJSON()
			canonical = err == nil && bytes.Equal(enc, raw)
		}
		for _, p := range probePaths(set) {
			want, ok := serializePath(p)
			if !ok {
				continue
			}
			has, ok := fieldsHas(raw, want)
			if canonical && (!ok || has != set.Has(p)) {
				t.Fatalf("%s: %v: scan says %v (ok %v), decoded set %v", raw, p, has, ok, set.Has(p))
			}
		}
		fieldsHas(raw, []string{"f:spec", "f:renewTime"})
	})
}

func TestSerializePathMatchesUpstream(t *testing.T) {
	for _, p := range []fieldpath.Path{
		fieldpath.MakePathOrDie("spec", "renewTime"),
		fieldpath.MakePathOrDie("metadata", "labels", "a\"b\\c<d>"),
		fieldpath.MakePathOrDie("status", "conditions", fieldpath.KeyByFields("type", "Ready"), "lastHeartbeatTime"),
		fieldpath.MakePathOrDie("spec", "args", 3),
		fieldpath.MakePathOrDie("spec", "finalizers", value.NewValueInterface("kubernetes")),
	} {
		got, ok := serializePath(p)
		if !ok {
			t.Fatalf("serializePath(%v) failed", p)
		}
		for i, pe := range p {
			want, err := fieldpath.SerializePathElement(pe)
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != want {
				t.Errorf("%v element %d: %q, upstream %q", p, i, got[i], want)
			}
		}
	}
}
