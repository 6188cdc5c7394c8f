package flowcontrol

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseUserAgentRules(t *testing.T) {
	rules, errs := parseUserAgentRules(map[string]string{
		"buggy":   "reject buggy-agent/v1.2",
		"chatty":  " 4 chatty/ ",
		"broad":   "reject buggy",
		"typo":    "rejekt x/",
		"noagent": "reject",
		"neg":     "-1 x/",
	})
	if len(errs) != 3 {
		t.Errorf("errors %v, want 3 (typo, noagent, neg)", errs)
	}
	var got []string
	for _, r := range rules {
		got = append(got, fmt.Sprintf("%s:%s:%d", r.name, r.prefix, r.limit.Load()))
	}
	// Longest prefix first.
	if want := "buggy:buggy-agent/v1.2:-1 chatty:chatty/:4 broad:buggy:-1"; strings.Join(got, " ") != want {
		t.Errorf("rules %q, want %q", strings.Join(got, " "), want)
	}
	var u uaRules
	u.set(&corev1.ConfigMap{Data: map[string]string{"chatty": "1 chatty/"}})
	r := u.match("chatty/0.1 (linux)")
	if r == nil || !r.acquire() || r.acquire() {
		t.Fatalf("limit 1: rule %+v", r)
	}
	// A change of limit keeps the rule and its in-flight count.
	u.set(&corev1.ConfigMap{Data: map[string]string{"chatty": "2 chatty/"}})
	if r2 := u.match("chatty/0.1"); r2 != r || !r2.acquire() || r2.acquire() {
		t.Errorf("after raising the limit to 2 with 1 in flight, one more should pass")
	}
	if u.match("other/1") != nil {
		t.Errorf("unmatched agent matched")
	}
}

func TestUserAgentRulesFromConfigMap(t *testing.T) {
	e := newEnv(t, nil, nil)
	sa := serviceAccount("default", "agent")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: UserAgentRulesNamespace, Name: UserAgentRulesName},
		Data: map[string]string{"buggy": "reject buggy-agent/"}}
	e.create("configmaps", cm)
	waitFor(t, "rule in force", func() bool {
		resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "buggy-agent/1.0", nil)
		return resp.StatusCode == http.StatusTooManyRequests
	})
	resp, body := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "buggy-agent/1.0", nil)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"reason":"TooManyRequests"`) {
		t.Errorf("rejection: %v %s", resp.Header, body)
	}
	if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "kubectl/v1.34", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("another agent: %d", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", admin, "buggy-agent/1.0", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("system:masters with the agent: %d", resp.StatusCode)
	}
	if n := testutil.ToFloat64(e.c.m.userAgent.WithLabelValues("buggy")); n < 2 {
		t.Errorf("myriad_flowcontrol_user_agent_rejected_requests_total{rule=buggy} = %v", n)
	}
	// A limit of 0 refuses short requests but not watches.
	obj, err := e.api.Objects().Get(context.Background(), configMapsGVR, UserAgentRulesNamespace, UserAgentRulesName)
	if err != nil {
		t.Fatal(err)
	}
	limited := obj.(*corev1.ConfigMap).DeepCopy()
	limited.Data = map[string]string{"buggy": "0 buggy-agent/"}
	if _, err := e.api.Objects().Update(context.Background(), configMapsGVR, limited); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "limit in force: the agent's watch passes", func() bool {
		resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", sa, "buggy-agent/1.0", nil)
		return resp.StatusCode == http.StatusOK
	})
	if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "buggy-agent/1.0", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a get under a limit of 0: %d", resp.StatusCode)
	}
	if obj, err = e.api.Objects().Get(context.Background(), configMapsGVR, UserAgentRulesNamespace, UserAgentRulesName); err != nil {
		t.Fatal(err)
	}
	if err := e.api.Objects().Delete(context.Background(), configMapsGVR, UserAgentRulesNamespace, UserAgentRulesName, obj); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rule lifted", func() bool {
		resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "buggy-agent/1.0", nil)
		return resp.StatusCode == http.StatusOK
	})
}

// bigConfigMaps creates n ConfigMaps of about size bytes in ns.
func (e *env) bigConfigMaps(ns string, n, size int) {
	e.t.Helper()
	if ns != "default" {
		e.create("namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i := range n {
		e.create("configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i),
			Labels: map[string]string{"app": fmt.Sprint(i % 2)}}, Data: map[string]string{"x": strings.Repeat("x", size)}})
	}
}

func TestListEstimate(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Estimator = EstimatorConfig{ListBytesPerSeat: 1000, MaxListSeats: 15}
	}, nil)
	e.bigConfigMaps("big", 10, 2000)
	e.bigConfigMaps("small", 1, 10)
	// The estimate reads the watch cache's books, which follow the
	// store's acknowledged writes a moment later.
	waitFor(t, "the cache holds the ConfigMaps", func() bool {
		big, _, _ := e.api.ListSize(configMapsGVR, "big", nil, nil)
		small, _, _ := e.api.ListSize(configMapsGVR, "small", nil, nil)
		return big == 10 && small == 1
	})
	tests := []struct {
		path     string
		min, max uint64
	}{
		{"/api/v1/namespaces/big/configmaps", 15, 15},                       // 10 × ~2.1 KB: 22 seats, capped
		{"/api/v1/namespaces/big/configmaps?limit=2", 5, 6},                 // a page of 2
		{"/api/v1/namespaces/big/configmaps?labelSelector=app%3D1", 11, 13}, // indexed label: half
		{"/api/v1/namespaces/small/configmaps", 1, 1},
		{"/api/v1/namespaces/none/configmaps", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, _ := http.NewRequest("GET", tt.path, nil)
			info, err := parseInfo(r)
			if err != nil {
				t.Fatal(err)
			}
			seats, ok := e.c.estimate.listSeats(r, info)
			if !ok || seats < tt.min || seats > tt.max {
				t.Errorf("seats %d (ok %v), want %d..%d", seats, ok, tt.min, tt.max)
			}
		})
	}
}

func TestActiveReject(t *testing.T) {
	sa := serviceAccount("default", "lister")
	t.Run("past the memory threshold", func(t *testing.T) {
		e := newEnv(t, func(c *Config) {
			c.Estimator = EstimatorConfig{ListBytesPerSeat: 1000}
			c.Reject = RejectConfig{ExpensiveListSeats: 5, MemoryThresholdBytes: 1}
		}, nil)
		e.bigConfigMaps("default", 5, 2000)
		resp, body := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "", nil)
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "short of memory") {
			t.Errorf("expensive list: %d %s", resp.StatusCode, body)
		}
		for _, path := range []string{"/api/v1/namespaces/kube-public/configmaps", "/api/v1/namespaces/default/configmaps/cm-1"} {
			if resp, body := e.do("GET", path, sa, "", nil); resp.StatusCode != http.StatusOK {
				t.Errorf("cheap %s: %d %s", path, resp.StatusCode, body)
			}
		}
		if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", admin, "", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("system:masters: %d", resp.StatusCode)
		}
		if n := testutil.ToFloat64(e.c.m.active.WithLabelValues("memory")); n != 1 {
			t.Errorf("active rejections (memory) %v", n)
		}
	})
	t.Run("while warming", func(t *testing.T) {
		warming := true
		e := newEnv(t, func(c *Config) {
			c.API = coldAPI{API: c.API, cold: &warming}
			c.Estimator = EstimatorConfig{ListBytesPerSeat: 1000}
			c.Reject = RejectConfig{ExpensiveListSeats: 5}
		}, nil)
		e.bigConfigMaps("default", 5, 2000)
		if resp, body := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "", nil); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "filling its caches") {
			t.Errorf("expensive list while warming: %d %s", resp.StatusCode, body)
		}
		warming = false
		if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("once warm: %d", resp.StatusCode)
		}
	})
}

// coldAPI is the real server reporting not ready while *cold: the state
// right after a start, which a ready test server has passed.
type coldAPI struct {
	API
	cold *bool
}

func (c coldAPI) Ready() bool { return !*c.cold && c.API.Ready() }
