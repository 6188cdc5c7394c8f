package flowcontrol

import (
	"fmt"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RejectConfig configures the rejections made before a request is
// classified or queued. The zero value rejects nothing but what the
// warming rule catches, with the defaults each field states.
type RejectConfig struct {
	// ExpensiveListSeats: a non-exempt LIST estimated at this many seats
	// or more is expensive. Default 10 (upstream's largest LIST).
	ExpensiveListSeats uint64
	// MemoryThresholdBytes, when > 0, rejects expensive requests while the
	// Go heap holds more than this many bytes of live and unswept objects.
	MemoryThresholdBytes uint64
	// RetryAfterSeconds is the Retry-After of these rejections. Default 1.
	RetryAfterSeconds int
}

func (c RejectConfig) withDefaults() RejectConfig {
	if c.ExpensiveListSeats == 0 {
		c.ExpensiveListSeats = 10
	}
	if c.RetryAfterSeconds <= 0 {
		c.RetryAfterSeconds = 1
	}
	return c
}

// heapSampler keeps the heap's size, read every period, so requests
// compare against an atomic rather than read runtime metrics each.
type heapSampler struct {
	bytes atomic.Uint64
}

func (h *heapSampler) sample() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		h.bytes.Store(s[0].Value.Uint64())
	}
}

// User-Agent rules: the emergency brake for a buggy component that
// cannot be told apart by its user (every kubelet, a DaemonSet's pods
// sharing one ServiceAccount). They live in a ConfigMap the server
// watches, so an operator changes them with kubectl at run time:
//
//	kubectl -n kube-system create configmap myriad-flowcontrol-user-agents \
//	  --from-literal=buggy-agent='reject my-agent/v1.2' \
//	  --from-literal=chatty-tool='4 chatty/'
//
// Each data entry is one rule, named by its key: "<action> <prefix>",
// where action is "reject" (answer 429 at once) or a number N (at most N
// requests with that User-Agent prefix in flight, watches and other
// long-running requests not counted; more get 429). The
// longest matching prefix wins. Members of system:masters are not
// braked, so an administrator can always undo a rule.
const (
	UserAgentRulesNamespace = "kube-system"
	UserAgentRulesName      = "myriad-flowcontrol-user-agents"
)

// uaRule is one parsed rule.
type uaRule struct {
	name   string
	prefix string
	// limit < 0 rejects everything; otherwise at most limit in flight.
	// Atomic because a rule that stays (same name and prefix) is kept
	// across changes, with its in-flight count, and only its limit set.
	limit    atomic.Int64
	inflight atomic.Int64
}

// uaRules holds the current rules; requests read them lock-free.
type uaRules struct {
	rules atomic.Pointer[[]*uaRule] // longest prefix first
	mu    sync.Mutex                // serializes set
}

// parseUserAgentRules parses the ConfigMap's data; bad entries are
// reported and skipped, so one typo does not lift the other brakes.
func parseUserAgentRules(data map[string]string) ([]*uaRule, []error) {
	var rules []*uaRule
	var errs []error
	for name, v := range data {
		action, prefix, ok := strings.Cut(strings.TrimSpace(v), " ")
		prefix = strings.TrimSpace(prefix)
		if !ok || prefix == "" {
			errs = append(errs, fmt.Errorf("rule %q: want \"<reject|N> <user-agent prefix>\", got %q", name, v))
			continue
		}
		r := &uaRule{name: name, prefix: prefix}
		r.limit.Store(-1)
		if action != "reject" {
			n, err := strconv.ParseInt(action, 10, 32)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("rule %q: action %q is neither \"reject\" nor a non-negative number", name, action))
				continue
			}
			r.limit.Store(n)
		}
		rules = append(rules, r)
	}
	sort.Slice(rules, func(i, j int) bool {
		if len(rules[i].prefix) != len(rules[j].prefix) {
			return len(rules[i].prefix) > len(rules[j].prefix)
		}
		return rules[i].name < rules[j].name
	})
	return rules, errs
}

// set replaces the rules from cm (nil: none). A rule whose name and
// prefix stay is kept, with its in-flight count (requests admitted under
// it release it), and takes the new limit.
func (u *uaRules) set(cm *corev1.ConfigMap) []error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	rules, errs := parseUserAgentRules(data)
	if old := u.rules.Load(); old != nil {
		for i, r := range rules {
			for _, o := range *old {
				if o.name == r.name && o.prefix == r.prefix {
					o.limit.Store(r.limit.Load())
					rules[i] = o
				}
			}
		}
	}
	u.rules.Store(&rules)
	return errs
}

// match returns the rule for userAgent, or nil.
func (u *uaRules) match(userAgent string) *uaRule {
	rules := u.rules.Load()
	if rules == nil {
		return nil
	}
	for _, r := range *rules {
		if strings.HasPrefix(userAgent, r.prefix) {
			return r
		}
	}
	return nil
}

// rejects reports whether r refuses every request.
func (r *uaRule) rejects() bool { return r.limit.Load() < 0 }

// acquire admits a request under r; release must follow when it did.
func (r *uaRule) acquire() bool {
	limit := r.limit.Load()
	if limit < 0 {
		return false
	}
	if r.inflight.Add(1) > limit {
		r.inflight.Add(-1)
		return false
	}
	return true
}

func (r *uaRule) release() { r.inflight.Add(-1) }

// samplePeriod is how often the heap is read for the memory threshold.
const samplePeriod = 250 * time.Millisecond
