package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestTokenFileImpersonationAudit runs `myriad up` with a static token
// file and an audit log, and proves with kubectl who the server saw: a
// token-file user, and alice through --as.
func TestTokenFileImpersonationAudit(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	policy := filepath.Join(dir, "policy.yaml")
	auditLog := filepath.Join(dir, "audit", "audit.log")
	if err := os.WriteFile(tokens, []byte("e2e-token-of-carol-0123456789,carol,5001,\"readers,ops\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := startCommand("up", filepath.Join(dir, "data"), port,
		"--scheduler=false", "--controllers=",
		"--token-auth-file", tokens, "--audit-policy-file", policy, "--audit-log-path", auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping myriad: %v", err)
		}
	}()

	// carol may read (RBAC: a role of its own, since view's rules are
	// aggregated by a controller this server does not run); the binding
	// reaches the index through its watch, so her first call is retried.
	s.mustKubectl(t, "", "create", "clusterrole", "read", "--verb=list", "--resource=configmaps,pods")
	s.mustKubectl(t, "", "create", "clusterrolebinding", "read", "--clusterrole=read", "--user=carol", "--group=devs")
	// Each kubectl call names its own namespace, so its event is found by
	// the request URI alone.
	waitFor(t, 10*time.Second, func() bool {
		_, err := s.kubectl(t, "", "--token", "e2e-token-of-carol-0123456789", "get", "configmaps", "-n", "carol-ns")
		return err == nil
	})
	if out, err := s.kubectl(t, "", "--token", "not-a-token", "get", "configmaps", "-n", "nobody-ns"); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Fatalf("a wrong token was accepted: %v\n%s", err, out)
	}
	s.mustKubectl(t, "", "--as", "alice", "--as-group", "devs", "get", "pods", "-n", "alice-ns")

	find := func(uri string) *auditv1.Event { return findEventEventually(t, auditLog, uri) }
	t.Run("token file user", func(t *testing.T) {
		ev := find("/api/v1/namespaces/carol-ns/configmaps")
		if ev.User.Username != "carol" || ev.User.UID != "5001" || strings.Join(ev.User.Groups, ",") != "readers,ops,system:authenticated" ||
			ev.ImpersonatedUser != nil || ev.ResponseStatus.Code != 200 || ev.Stage != auditv1.StageResponseComplete {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		ev := find("/api/v1/namespaces/nobody-ns/configmaps")
		if ev.User.Username != "" || ev.ResponseStatus.Code != 401 {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("kubectl --as", func(t *testing.T) {
		ev := find("/api/v1/namespaces/alice-ns/pods")
		if ev.User.Username != "system:admin" || ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "alice" ||
			strings.Join(ev.ImpersonatedUser.Groups, ",") != "devs,system:authenticated" || ev.ResponseStatus.Code != 200 {
			t.Fatalf("event %+v", ev)
		}
	})
}

// findEventEventually waits up to 10 s for findEvent to find uri.
func findEventEventually(t *testing.T, path, uri string) *auditv1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ev := findEvent(t, path, uri); ev != nil {
			return ev
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no audit event for %s", uri)
	return nil
}

// findEvent returns the last audit event in path whose request URI starts
// with uri.
func findEvent(t *testing.T, path, uri string) *auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var found *auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line is not an Event: %v\n%s", err, sc.Text())
		}
		if strings.HasPrefix(ev.RequestURI, uri) {
			found = &ev
		}
	}
	return found
}
