package flowcontrol

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// limitedLevel is a Limited priority level with the given shares, its
// queuing (nil: reject at once) and no lending.
func limitedLevel(name string, shares int32, queuing *flowcontrolv1.QueuingConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	lr := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if queuing != nil {
		lr = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: queuing}
	}
	zero := int32(0)
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares, LendablePercent: &zero,
				BorrowingLimitPercent: &zero, LimitResponse: lr}}}
}

// usersSchema sends the named users' requests of every kind to level,
// one flow per user.
func usersSchema(name, level string, users ...string) *flowcontrolv1.FlowSchema {
	var subjects []flowcontrolv1.Subject
	for _, u := range users {
		subjects = append(subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: u}})
	}
	return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
		MatchingPrecedence:         100,
		DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: subjects,
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
				Namespaces: []string{"*"}, ClusterScope: true}}}},
	}}
}

// waitClassified waits until user's requests carry level's UID: the
// dispatcher has digested the new objects.
func (e *env) waitClassified(user, level string) {
	e.t.Helper()
	waitFor(e.t, user+" classified into "+level, func() bool {
		resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", user, "", nil)
		return e.nameOf(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)) == level
	})
}

// nameOf finds the FlowSchema or priority level with uid.
func (e *env) nameOf(uid string) string {
	for _, fs := range listOf[*flowcontrolv1.FlowSchema](e.c.fsInf) {
		if string(fs.UID) == uid {
			return fs.Name
		}
	}
	for _, pl := range listOf[*flowcontrolv1.PriorityLevelConfiguration](e.c.plInf) {
		if string(pl.UID) == uid {
			return pl.Name
		}
	}
	return ""
}

func TestClassification(t *testing.T) {
	e := newEnv(t, nil, nil)
	tests := []struct {
		user, method, path string
		wantFS, wantPL     string
	}{
		{serviceAccount("default", "app"), "GET", "/api/v1/namespaces/default/configmaps", "service-accounts", "workload-low"},
		{serviceAccount("kube-system", "ctrl"), "GET", "/api/v1/namespaces/default/pods", "kube-system-service-accounts", "workload-high"},
		{"system:node:n1|system:nodes", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "system-node-high", "node-high"},
		{"system:node:n1|system:nodes", "GET", "/api/v1/namespaces/default/pods", "system-nodes", "system"},
		{"system:kube-scheduler", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "system-leader-election", "leader-election"},
		{"system:kube-scheduler", "GET", "/api/v1/pods", "kube-scheduler", "workload-high"},
		{"someone", "GET", "/api/v1/namespaces/default/configmaps", "global-default", "global-default"},
		{"someone", "GET", "/healthz", "probes", "exempt"},
	}
	for _, tt := range tests {
		t.Run(tt.user+" "+tt.path, func(t *testing.T) {
			resp, _ := e.do(tt.method, tt.path, tt.user, "", nil)
			fs := e.nameOf(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID))
			pl := e.nameOf(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID))
			if fs != tt.wantFS || pl != tt.wantPL {
				t.Errorf("classified as %q/%q, want %q/%q", fs, pl, tt.wantFS, tt.wantPL)
			}
		})
	}
	t.Run("system:masters skips the dispatcher", func(t *testing.T) {
		resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", admin, "", nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "" {
			t.Errorf("admin: %d, headers %v", resp.StatusCode, resp.Header)
		}
	})
}

// sleepy answers 200 after d: every request holds its seat that long.
func sleepy(d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(d)
		w.WriteHeader(http.StatusOK)
	})
}

func TestFairQueuing(t *testing.T) {
	e := newEnv(t, nil, sleepy(10*time.Millisecond))
	// heavy keeps 100 requests outstanding, light 2: FIFO would give
	// light about 2% of the seats. Fair queuing serves queues in turn and
	// shuffle sharding puts each request of a flow in the shortest of the
	// flow's handSize queues: a flow spread over h queues gets up to h
	// turns to a flow in one, so light's share is about 1/(h+1) — half
	// with a hand of one, a fifth with four — and never starved.
	tests := []struct {
		handSize int32
		minShare float64 // light's fraction of heavy's completions
	}{
		{1, 0.4},
		{4, 0.15},
	}
	for _, tt := range tests {
		t.Run("hand size "+strconv.Itoa(int(tt.handSize)), func(t *testing.T) {
			name := "fair-" + strconv.Itoa(int(tt.handSize))
			heavyUser, lightUser := name+"-heavy", name+"-light"
			// 50 server seats, 10 of 255 shares: a concurrency limit of 2.
			e.create("prioritylevelconfigurations", limitedLevel(name, 10, &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: tt.handSize, QueueLengthLimit: 200}))
			e.create("flowschemas", usersSchema(name, name, heavyUser, lightUser))
			e.waitClassified(heavyUser, name)
			e.waitClassified(lightUser, name)
			var done [2]atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i, n := range []int{100, 2} {
				user := []string{heavyUser, lightUser}[i]
				for range n {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", user, "", nil); resp.StatusCode == http.StatusOK {
								done[i].Add(1)
							}
						}
					})
				}
			}
			time.Sleep(1500 * time.Millisecond)
			close(stop)
			wg.Wait()
			heavy, light := done[0].Load(), done[1].Load()
			t.Logf("heavy %d, light %d", heavy, light)
			if float64(light) < tt.minShare*float64(heavy) {
				t.Errorf("light got %d requests through to heavy's %d: less than %.2f of it", light, heavy, tt.minShare)
			}
		})
	}
}

func TestRejectWithRetryAfter(t *testing.T) {
	e := newEnv(t, nil, sleepy(50*time.Millisecond))
	e.create("prioritylevelconfigurations", limitedLevel("tiny", 1, nil))
	e.create("flowschemas", usersSchema("tiny", "tiny", "greedy"))
	e.waitClassified("greedy", "tiny")

	var mu sync.Mutex
	codes := map[int]int{}
	var rejected *http.Response
	var body string
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, b := e.do("GET", "/api/v1/namespaces/default/configmaps", "greedy", "", nil)
			mu.Lock()
			defer mu.Unlock()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests {
				rejected, body = resp, b
			}
		})
	}
	wg.Wait()
	if codes[http.StatusOK] == 0 || codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("codes %v: want some admitted and some rejected", codes)
	}
	if s, err := strconv.Atoi(rejected.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q", rejected.Header.Get("Retry-After"))
	}
	var st metav1.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" || st.Reason != metav1.StatusReasonTooManyRequests || st.Code != 429 {
		t.Errorf("429 body is not a TooManyRequests Status: %q", body)
	}
	if e.nameOf(rejected.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)) != "tiny" {
		t.Errorf("rejection lacks the priority level header: %v", rejected.Header)
	}
	// Others are not touched by greedy's level.
	if resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps", serviceAccount("default", "x"), "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("another user: %d", resp.StatusCode)
	}
}

func TestWatchReleasesItsSeat(t *testing.T) {
	// A level of one seat that queues (a request finishing releases its
	// seat just after its answer is sent, so back-to-back requests may
	// briefly meet it taken) for at most 2 s: a watch that kept its seat
	// would make every request beside it time out in the queue.
	e := newEnv(t, func(c *Config) { c.RequestWaitLimit = 2 * time.Second }, nil)
	e.create("prioritylevelconfigurations", limitedLevel("one", 1, &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 10}))
	e.create("flowschemas", usersSchema("one", "one", "watcher"))
	e.waitClassified("watcher", "one")
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/namespaces/default/configmaps?watch=1", nil)
	req.Header.Set("X-Test-User", "watcher")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	// The level's single seat is free again once the watch started.
	for range 5 {
		if r, b := e.do("GET", "/api/v1/namespaces/default/configmaps", "watcher", "", nil); r.StatusCode != http.StatusOK {
			t.Fatalf("get beside the watch: %d %s", r.StatusCode, b)
		}
	}
}
