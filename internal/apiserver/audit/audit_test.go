package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
)

const testPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: []
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Request
  resources:
  - group: ""
    resources: ["serviceaccounts"]
- level: RequestResponse
  omitManagedFields: true
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
`

// readEvents reads the audit log written so far.
func readEvents(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("log line is not an Event: %v\n%s", err, sc.Text())
		}
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" {
			t.Fatalf("log line kind %q apiVersion %q", ev.Kind, ev.APIVersion)
		}
		events = append(events, ev)
	}
	return events
}

// byID groups events by audit ID, stages in log order.
func byID(events []auditv1.Event) map[string][]auditv1.Event {
	m := map[string][]auditv1.Event{}
	for _, ev := range events {
		m[string(ev.AuditID)] = append(m[string(ev.AuditID)], ev)
	}
	return m
}

func stages(evs []auditv1.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, string(ev.Stage))
	}
	return strings.Join(s, ",")
}

// idRecorder remembers the Audit-Id of every response client-go sees.
type idRecorder struct {
	next http.RoundTripper
	ids  chan string
}

func (r *idRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.ids <- req.Method + " " + req.URL.Path + " " + resp.Header.Get(HeaderAuditID)
	}
	return resp, err
}

func TestAuditLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit", "audit.log")
	a, err := New(Config{PolicyFile: writeFile(t, testPolicy), LogPath: logPath, LogBatchMaxWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	env := newServerEnv(t, a)
	ctx := context.Background()

	ids := make(chan string, 100)
	withIDs := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &idRecorder{next: rt, ids: ids} }
		return cfg
	}
	admin := env.client(t, withIDs(env.admin))
	lastID := func(t *testing.T, method, path string) string {
		t.Helper()
		for {
			select {
			case s := <-ids:
				if strings.HasPrefix(s, method+" "+path+" ") {
					id := strings.TrimPrefix(s, method+" "+path+" ")
					if id == "" {
						t.Fatalf("%s %s: no Audit-Id header", method, path)
					}
					return id
				}
			default:
				t.Fatalf("no response for %s %s", method, path)
			}
		}
	}

	// A create at RequestResponse level.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	created, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{FieldManager: "audit-test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.ManagedFields) == 0 {
		t.Fatal("the server set no managedFields; the omitManagedFields check would prove nothing")
	}
	createID := lastID(t, "POST", "/api/v1/namespaces/default/configmaps")

	// A create at Request level.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default"}}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requestLevelID := lastID(t, "POST", "/api/v1/namespaces/default/serviceaccounts")

	// A get, impersonating alice, at Metadata level.
	asAlice := withIDs(env.admin)
	asAlice.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"devs"}}
	if _, err := env.client(t, asAlice).CoreV1().Pods("default").Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing pod: %v", err)
	}
	getID := lastID(t, "GET", "/api/v1/namespaces/default/pods/missing")

	// A watch: ResponseStarted when the stream opens, ResponseComplete
	// when it ends, no response body.
	w, err := admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchID := lastID(t, "GET", "/api/v1/namespaces/default/pods")
	w.Stop()

	// A 403.
	eve := withIDs(&rest.Config{Host: env.srv.URL, BearerToken: eveToken, QPS: -1})
	if _, err := env.client(t, eve).CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("eve reading a secret: %v", err)
	}
	forbiddenID := lastID(t, "GET", "/api/v1/namespaces/default/secrets/s")

	// A 401, and a path the policy does not audit.
	for _, path := range []string{"/api/v1/pods", "/healthz"} {
		req, _ := http.NewRequest("GET", env.srv.URL+path, nil)
		if path == "/api/v1/pods" {
			req.Header.Set("Authorization", "Bearer wrong")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get(HeaderAuditID) == "" {
			t.Fatalf("%s: no Audit-Id header", path)
		}
	}

	// The watch's ResponseComplete is written when its handler returns,
	// after the client stopped; wait for it, then flush everything.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(stages(byID(readEvents(t, logPath))[watchID]), "ResponseComplete") {
		if time.Now().After(deadline) {
			t.Fatalf("watch stages %q", stages(byID(readEvents(t, logPath))[watchID]))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, logPath)
	all := byID(events)

	t.Run("create", func(t *testing.T) {
		evs := all[createID]
		if got := stages(evs); got != "RequestReceived,ResponseComplete" {
			t.Fatalf("stages %s", got)
		}
		ev := evs[1]
		if ev.Level != auditv1.LevelRequestResponse || ev.Verb != "create" || ev.User.Username != "system:admin" ||
			ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != "default" || ev.ObjectRef.APIVersion != "v1" ||
			ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 || ev.RequestURI != "/api/v1/namespaces/default/configmaps?fieldManager=audit-test" {
			t.Fatalf("event %+v", ev)
		}
		var req, resp corev1.ConfigMap
		if ev.RequestObject == nil || json.Unmarshal(ev.RequestObject.Raw, &req) != nil || req.Data["k"] != "v" {
			t.Fatalf("requestObject %v", ev.RequestObject)
		}
		if ev.ResponseObject == nil || json.Unmarshal(ev.ResponseObject.Raw, &resp) != nil || resp.UID == "" || resp.ResourceVersion == "" {
			t.Fatalf("responseObject %v", ev.ResponseObject)
		}
		if len(resp.ManagedFields) != 0 {
			t.Fatalf("managedFields logged despite omitManagedFields: %s", ev.ResponseObject.Raw)
		}
		if ev.Annotations[AnnotationDecision] != "allow" {
			t.Fatalf("annotations %v", ev.Annotations)
		}
		if len(ev.SourceIPs) == 0 || ev.UserAgent == "" || ev.RequestReceivedTimestamp.IsZero() || ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) {
			t.Fatalf("request metadata %+v", ev)
		}
	})
	t.Run("request level", func(t *testing.T) {
		evs := all[requestLevelID]
		ev := evs[len(evs)-1]
		var req corev1.ServiceAccount
		if ev.Level != auditv1.LevelRequest || ev.RequestObject == nil || json.Unmarshal(ev.RequestObject.Raw, &req) != nil ||
			req.Name != "robot" || ev.ResponseObject != nil || ev.ResponseStatus.Code != 201 {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("get as alice", func(t *testing.T) {
		evs := all[getID]
		if got := stages(evs); got != "RequestReceived,ResponseComplete" {
			t.Fatalf("stages %s", got)
		}
		ev := evs[1]
		if ev.Level != auditv1.LevelMetadata || ev.Verb != "get" || ev.User.Username != "system:admin" ||
			ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "alice" ||
			strings.Join(ev.ImpersonatedUser.Groups, ",") != "devs,system:authenticated" ||
			ev.ObjectRef == nil || ev.ObjectRef.Name != "missing" || ev.ResponseStatus.Code != 404 ||
			ev.ResponseStatus.Reason != metav1.StatusReasonNotFound || ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("watch", func(t *testing.T) {
		evs := all[watchID]
		if got := stages(evs); got != "RequestReceived,ResponseStarted,ResponseComplete" {
			t.Fatalf("stages %s", got)
		}
		for _, ev := range evs {
			if ev.Verb != "watch" || ev.ResponseObject != nil {
				t.Fatalf("event %+v", ev)
			}
		}
		if evs[1].ResponseStatus == nil || evs[1].ResponseStatus.Code != 200 {
			t.Fatalf("ResponseStarted status %+v", evs[1].ResponseStatus)
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		evs := all[forbiddenID]
		ev := evs[len(evs)-1]
		if ev.Stage != auditv1.StageResponseComplete || ev.User.Username != "eve" || ev.ResponseStatus.Code != 403 ||
			ev.ResponseStatus.Reason != metav1.StatusReasonForbidden ||
			!strings.Contains(ev.ResponseStatus.Message, `User "eve" cannot get resource "secrets" in API group "" in the namespace "default": eve may not`) {
			t.Fatalf("event %+v status %+v", ev, ev.ResponseStatus)
		}
		if ev.Annotations[AnnotationDecision] != "forbid" || ev.Annotations[AnnotationReason] != "eve may not" {
			t.Fatalf("annotations %v", ev.Annotations)
		}
	})
	t.Run("unauthenticated", func(t *testing.T) {
		var found bool
		for _, ev := range events {
			if ev.RequestURI == "/api/v1/pods" {
				found = true
				if ev.Stage != auditv1.StageResponseStarted || ev.User.Username != "" || ev.ResponseStatus.Code != 401 ||
					ev.ResponseStatus.Message != "Authentication failed, attempted: bearer" {
					t.Fatalf("event %+v status %+v", ev, ev.ResponseStatus)
				}
			}
			if strings.HasPrefix(ev.RequestURI, "/healthz") {
				t.Fatalf("level None audited: %+v", ev)
			}
		}
		if !found {
			t.Fatal("no event for the 401")
		}
	})
}

func TestNew(t *testing.T) {
	policy := writeFile(t, testPolicy)
	tests := []struct {
		name string
		cfg  Config
		on   bool
		err  bool
	}{
		{"nothing", Config{}, false, false},
		{"policy without backend", Config{PolicyFile: policy}, false, false},
		{"backend without policy", Config{LogPath: "-"}, false, true},
		{"stdout", Config{PolicyFile: policy, LogPath: "-"}, true, false},
		{"blocking", Config{PolicyFile: policy, LogPath: "-", LogMode: ModeBlocking}, true, false},
		{"bad mode", Config{PolicyFile: policy, LogPath: "-", LogMode: "sometimes"}, false, true},
		{"missing policy", Config{PolicyFile: "/nonexistent", LogPath: "-"}, false, true},
		{"bad policy", Config{PolicyFile: writeFile(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n"), LogPath: "-"}, false, true},
		{"rotation", Config{PolicyFile: policy, LogPath: filepath.Join(t.TempDir(), "a.log"), LogMaxSize: 1, LogMaxBackups: 2, LogMaxAge: 1}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.cfg)
			if (err != nil) != tt.err || (a != nil) != tt.on {
				t.Fatalf("auditor %v, err %v", a, err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
