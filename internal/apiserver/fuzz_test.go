package apiserver

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// fuzzServer is a started Server over a fresh store with its "default"
// namespace; the fuzz targets drive the handlers' pieces directly.
func fuzzServer(f *testing.F) (*Server, []*resourceHandler) {
	f.Helper()
	st, err := embedded.Open(context.Background(), embedded.Options{Dir: f.TempDir(), Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	s, err := New(Config{Store: st, Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Stop)
	deadline := time.Now().Add(30 * time.Second)
	for !s.Ready() {
		if time.Now().After(deadline) {
			f.Fatal("caches not ready after 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The server creates "default" itself at start (bootstrap).
	var hs []*resourceHandler
	for _, h := range s.handlers {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].res.StorageKeyPrefix < hs[j].res.StorageKeyPrefix })
	return s, hs
}

// clientError fails unless err is an API status a client can act on: a
// 4xx, never a 500 or a bare error.
func clientError(t *testing.T, what string, err error) {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("%s: not an API status: %T %v", what, err, err)
	}
	if code := st.Status().Code; code < 400 || code >= 500 {
		t.Fatalf("%s: status %d: %v", what, code, err)
	}
}

var fuzzContentTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "", "text/plain", "application/json; charset=utf-8"}
var fuzzValidation = []string{"", "Strict", "Warn", "Ignore"}

// FuzzDecodeObject: a request body of any content type for any resource
// decodes to an object of the resource's Kind or fails with a 4xx Status;
// what decodes then goes through the dry-run create path (defaulting,
// validation, allocation) with the same guarantee.
func FuzzDecodeObject(f *testing.F) {
	s, hs := fuzzServer(f)
	seeds := []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30001}]}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":-1}}`,
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n",
		`{"metadata":{"name":"x","resourceVersion":"1"},"bogus":true}`,
		`null`, `[]`, `{"kind":1}`, "k8s\x00\x0a\x02\x0a\x00\x12\x00",
	}
	for i, seed := range seeds {
		f.Add(uint8(i), uint8(i), uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, resIdx, ctIdx, valIdx uint8, body []byte) {
		h := hs[int(resIdx)%len(hs)]
		ct := fuzzContentTypes[int(ctIdx)%len(fuzzContentTypes)]
		q := url.Values{}
		if v := fuzzValidation[int(valIdx)%len(fuzzValidation)]; v != "" {
			q.Set("fieldValidation", v)
		}
		r := httptest.NewRequest("POST", "/x?"+q.Encode(), bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		obj, err := s.decodeObject(w, r, body, h.res.GroupVersionKind(), h.res.New())
		if err != nil {
			clientError(t, "decode", err)
			return
		}
		if reflect.TypeOf(obj) != reflect.TypeOf(h.res.New()) {
			t.Fatalf("decoded a %T for %s", obj, h.res.Resource)
		}
		if gvk := obj.GetObjectKind().GroupVersionKind(); gvk != h.res.GroupVersionKind() {
			t.Fatalf("decoded object has GVK %v, want %v", gvk, h.res.GroupVersionKind())
		}
		_, err = h.createObject(context.Background(), obj, "default", writeOptions{dryRun: true, fieldManager: "fuzz"})
		if err != nil {
			clientError(t, "dry-run create", err)
		}
	})
}

// FuzzListOptions: any query string either parses into list options and
// selectors or fails with a 400, for list, watch and deletecollection, and
// as DeleteOptions.
func FuzzListOptions(f *testing.F) {
	s, hs := fuzzServer(f)
	for i, seed := range []string{
		"labelSelector=a%3Db,c!%3Dd&fieldSelector=metadata.name%3Dx&limit=5",
		"resourceVersion=10&resourceVersionMatch=NotOlderThan",
		"watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
		"continue=abc&limit=-1&timeoutSeconds=9999999999999999999",
		"fieldSelector=spec.nodeName%3Dn1,status.phase!%3DRunning",
		"labelSelector=a+in+(b,c),!d&resourceVersion=0",
		"gracePeriodSeconds=5&propagationPolicy=Foreground&dryRun=All&preconditions.uid=x",
		"%zz=1&;&&=",
	} {
		f.Add(uint8(i), seed)
	}
	f.Fuzz(func(t *testing.T, resIdx uint8, query string) {
		h := hs[int(resIdx)%len(hs)]
		// Built by hand: the query is used raw, as net/http hands it over.
		r := (&http.Request{Method: "GET", URL: &url.URL{Path: "/x", RawQuery: query}, Header: http.Header{}}).WithContext(context.Background())
		for _, watch := range []bool{false, true} {
			_, label, field, err := h.listOptions(r, "default", watch)
			if err != nil {
				clientError(t, "listOptions", err)
				continue
			}
			if label == nil || field == nil {
				t.Fatal("listOptions returned nil selectors without an error")
			}
		}
		if _, err := s.decodeDeleteOptions(r, nil); err != nil {
			clientError(t, "decodeDeleteOptions", err)
		}
		_, _ = s.negotiateOutput(r, true)
	})
}
