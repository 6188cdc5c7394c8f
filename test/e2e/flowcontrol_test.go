package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestFlowControlKubectl: myriad up serves upstream's APF configuration,
// and a FlowSchema plus a PriorityLevelConfiguration written with kubectl
// limit one ServiceAccount — its requests get 429 with Retry-After —
// while another ServiceAccount's do not.
func TestFlowControlKubectl(t *testing.T) {
	s := shared
	out := s.mustKubectl(t, "", "get", "flowschemas,prioritylevelconfigurations")
	for _, want := range []string{"catch-all", "exempt", "service-accounts", "system-leader-election", "workload-low", "node-high"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get flowschemas,prioritylevelconfigurations lacks %s:\n%s", want, out)
		}
	}
	ns := "e2e-apf"
	s.mustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _ = s.kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	for _, sa := range []string{"greedy", "polite"} {
		s.mustKubectl(t, "", "-n", ns, "create", "serviceaccount", sa)
		s.mustKubectl(t, "", "-n", ns, "create", "rolebinding", sa, "--clusterrole=view", "--serviceaccount="+ns+":"+sa)
	}
	s.mustKubectl(t, fmt.Sprintf(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: e2e-tiny}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: e2e-limit-greedy}
spec:
  matchingPrecedence: 500
  priorityLevelConfiguration: {name: e2e-tiny}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: ServiceAccount, serviceAccount: {namespace: %s, name: greedy}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
`, ns), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = s.kubectl(t, "", "delete", "flowschema", "e2e-limit-greedy")
		_, _ = s.kubectl(t, "", "delete", "prioritylevelconfiguration", "e2e-tiny")
	})
	// Lists of 40 ConfigMaps of 20 KB take long enough to overlap.
	c := s.client(t)
	for i := range 40 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"x": strings.Repeat("x", 20<<10)}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	plUID := strings.TrimSpace(s.mustKubectl(t, "", "get", "prioritylevelconfiguration", "e2e-tiny", "-o", "jsonpath={.metadata.uid}"))

	clientFor := func(sa string) *http.Client {
		token := strings.TrimSpace(s.mustKubectl(t, "", "-n", ns, "create", "token", sa))
		cfg := rest.AnonymousClientConfig(s.restConfig(t))
		cfg.BearerToken = token
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	greedy, polite := clientFor("greedy"), clientFor("polite")
	url := s.restConfig(t).Host + "/api/v1/namespaces/" + ns + "/configmaps"
	get := func(c *http.Client) (*http.Response, error) {
		resp, err := c.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := get(greedy)
		if err == nil && resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) == plUID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("greedy's requests never reached e2e-tiny (last: %v %v)", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	burst := func(c *http.Client) (codes map[int]int, retryAfter string) {
		codes = map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				resp, err := get(c)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					codes[0]++
					return
				}
				codes[resp.StatusCode]++
				if resp.StatusCode == http.StatusTooManyRequests {
					retryAfter = resp.Header.Get("Retry-After")
				}
			})
		}
		wg.Wait()
		return codes, retryAfter
	}
	codes, retryAfter := burst(greedy)
	if codes[http.StatusTooManyRequests] == 0 || retryAfter == "" {
		t.Errorf("greedy's burst: codes %v, Retry-After %q; want 429s with Retry-After", codes, retryAfter)
	}
	if codes, _ := burst(polite); codes[http.StatusOK] != 100 {
		t.Errorf("polite's burst: codes %v; want all 200", codes)
	}
	metrics := s.mustKubectl(t, "", "get", "--raw", "/metrics")
	if !strings.Contains(metrics, `apiserver_flowcontrol_rejected_requests_total{flow_schema="e2e-limit-greedy",priority_level="e2e-tiny",reason="concurrency-limit"}`) {
		t.Errorf("/metrics lacks greedy's rejections")
	}
	if out := s.mustKubectl(t, "", "get", "--raw", "/debug/api_priority_and_fairness/dump_priority_levels"); !strings.Contains(out, "e2e-tiny") {
		t.Errorf("dump_priority_levels lacks e2e-tiny:\n%s", out)
	}
}
