package audit

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
)

// TestWebhookBackend sends events to a real HTTPS audit webhook; Close
// delivers what is still batched.
func TestWebhookBackend(t *testing.T) {
	var mu sync.Mutex
	var got []auditv1.Event
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var list auditv1.EventList
		if err := json.NewDecoder(r.Body).Decode(&list); err != nil || list.Kind != "EventList" {
			http.Error(w, "bad list", 400)
			return
		}
		mu.Lock()
		got = append(got, list.Items...)
		mu.Unlock()
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kubeconfig := writeFile(t, `apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: `+srv.URL+`
    certificate-authority-data: `+base64.StdEncoding.EncodeToString(ca)+`
users:
- name: apiserver
  user: {}
contexts:
- name: audit
  context: {cluster: audit, user: apiserver}
current-context: audit
`)
	a, err := New(Config{PolicyFile: writeFile(t, metadataPolicyText), WebhookConfigFile: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	h := chain(okHandler, a, authz.AlwaysAllow())
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/x", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Stage != auditv1.StageRequestReceived || got[1].Stage != auditv1.StageResponseComplete ||
		got[1].User.Username != "system:admin" || got[1].ObjectRef.Name != "x" {
		t.Fatalf("webhook received %+v", got)
	}
}

// TestPanicStage checks that a handler panic is audited at stage Panic
// and still propagates to the recovery filter.
func TestPanicStage(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.log")
	a, err := New(Config{PolicyFile: writeFile(t, metadataPolicyText), LogPath: logPath, LogMode: ModeBlocking})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), a, authz.AlwaysAllow())
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods", nil)
	r.Header.Set("Authorization", "Bearer "+adminToken)
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("panic %v did not propagate", p)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	events := readEvents(t, logPath)
	if got := stages(events); got != "RequestReceived,Panic" {
		t.Fatalf("stages %s", got)
	}
	if s := events[1].ResponseStatus; s == nil || s.Code != 500 || s.Message != "APIServer panic'd: boom" {
		t.Fatalf("status %+v", s)
	}
}

// TestLogRotation checks --audit-log-maxsize/maxbackup: past 1 MB the
// log rotates, and no more than the configured backups are kept.
func TestLogRotation(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	a, err := New(Config{PolicyFile: writeFile(t, metadataPolicyText), LogPath: logPath, LogMode: ModeBlocking, LogMaxSize: 1, LogMaxBackups: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := chain(okHandler, a, authz.AlwaysAllow())
	// About 1 KB per event, two per request: 3 MB in all.
	for range 1500 {
		r := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/x", nil)
		r.Header.Set("Authorization", "Bearer "+adminToken)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// lumberjack removes old backups in the background; give it a moment.
	var files []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		files, _ = filepath.Glob(filepath.Join(dir, "audit*.log"))
		if len(files) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(files) != 2 {
		t.Fatalf("files %v, want the log and one backup", files)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1<<20 {
			t.Fatalf("%s is %d bytes, over the 1 MB limit", f, st.Size())
		}
	}
	if events := readEvents(t, logPath); len(events) == 0 {
		t.Fatal("the current log is empty")
	}
}
