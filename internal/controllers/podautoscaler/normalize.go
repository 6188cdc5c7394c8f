package podautoscaler

import (
	"math"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Without spec.behavior a scale-up may at most double the replicas (or
// reach 4), as upstream: a bogus burst of usage cannot explode a target.
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

type recommendation struct {
	replicas int32
	at       time.Time
}

type scaleEvent struct {
	change   int32
	at       time.Time
	outdated bool
}

// history is what the controller remembers per HPA between syncs, as
// upstream: the recent unstabilized recommendations (for the
// stabilization windows) and the recent scale changes (for the rate
// policies). It lives in memory only; a new leader starts afresh.
type history struct {
	mu struct {
		sync.Mutex
		recommendations map[string][]recommendation
		scaleUp         map[string][]scaleEvent
		scaleDown       map[string][]scaleEvent
	}
}

func newHistory() *history {
	h := &history{}
	h.mu.recommendations = map[string][]recommendation{}
	h.mu.scaleUp = map[string][]scaleEvent{}
	h.mu.scaleDown = map[string][]scaleEvent{}
	return h
}

// forget drops everything about key (its HPA is gone).
func (h *history) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.mu.recommendations, key)
	delete(h.mu.scaleUp, key)
	delete(h.mu.scaleDown, key)
}

// recordInitial seeds key's recommendations with the current replicas the
// first time it is seen, so a fresh controller does not scale down at once.
func (h *history) recordInitial(key string, current int32, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.recommendations[key] == nil {
		h.mu.recommendations[key] = []recommendation{{current, now}}
	}
}

// recordLocked stores rec, reusing the slot of a sample older than every
// window when there is one (oldIndex ≥ 0) so the history stays bounded.
func (h *history) recordLocked(key string, oldIndex int, rec recommendation) {
	if oldIndex >= 0 {
		h.mu.recommendations[key][oldIndex] = rec
		return
	}
	h.mu.recommendations[key] = append(h.mu.recommendations[key], rec)
}

// stabilize (no behavior) is the highest recommendation within window,
// counting desired, which it records.
func (h *history) stabilize(key string, desired int32, window time.Duration, now time.Time) int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	highest, old := desired, -1
	cutoff := now.Add(-window)
	for i, r := range h.mu.recommendations[key] {
		if r.at.Before(cutoff) {
			old = i
		} else if r.replicas > highest {
			highest = r.replicas
		}
	}
	h.recordLocked(key, old, recommendation{desired, now})
	return highest
}

// stabilizeWithBehavior bounds desired by the recommendations within each
// direction's window: no higher than the lowest within the scale-up window,
// no lower than the highest within the scale-down window (and never past
// current in the direction it would not move). It records desired.
func (h *history) stabilizeWithBehavior(key string, current, desired int32, up, down time.Duration, now time.Time) (int32, string, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	upRec, downRec, old := desired, desired, -1
	upCutoff, downCutoff := now.Add(-up), now.Add(-down)
	for i, r := range h.mu.recommendations[key] {
		if r.at.After(upCutoff) {
			upRec = min(upRec, r.replicas)
		}
		if r.at.After(downCutoff) {
			downRec = max(downRec, r.replicas)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			old = i
		}
	}
	rec := max(current, upRec)
	rec = min(rec, downRec)
	h.recordLocked(key, old, recommendation{desired, now})
	if desired >= current {
		return rec, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return rec, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// storeScaleEvent remembers a rescale from prev to next for the rate
// policies (only with a behavior: without one nothing reads them).
func (h *history) storeScaleEvent(b *autoscalingv2.HorizontalPodAutoscalerBehavior, key string, prev, next int32, now time.Time) {
	if b == nil || prev == next {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	events, rules, change := h.mu.scaleUp, b.ScaleUp, next-prev
	if next < prev {
		events, rules, change = h.mu.scaleDown, b.ScaleDown, prev-next
	}
	// Events older than the longest period no policy reads: reuse a slot.
	cutoff := now.Add(-time.Duration(longestPeriod(rules)) * time.Second)
	evs := events[key]
	for i := range evs {
		if evs[i].at.Before(cutoff) {
			evs[i].outdated = true
		}
	}
	ev := scaleEvent{change: change, at: now}
	for i := range evs {
		if evs[i].outdated {
			evs[i] = ev
			return
		}
	}
	events[key] = append(evs, ev)
}

func longestPeriod(r *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	if r == nil {
		return 0
	}
	for _, p := range r.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}

// changeWithin is the replicas added (or removed) by events within the
// last periodSeconds.
func changeWithin(periodSeconds int32, events []scaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// scaleUpLimit is the most replicas the scale-up policies allow now: each
// policy counts from the replicas at the start of its period.
func scaleUpLimit(current int32, ups, downs []scaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(rules)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	var result int32 = math.MinInt32
	pick := func(a, b int32) int32 { return max(a, b) }
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, func(a, b int32) int32 { return min(a, b) }
	}
	for _, p := range rules.Policies {
		start := current - changeWithin(p.PeriodSeconds, ups, now) + changeWithin(p.PeriodSeconds, downs, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			// Rounded up, or a small target could never grow.
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is the fewest replicas the scale-down policies allow now.
func scaleDownLimit(current int32, ups, downs []scaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(rules)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	var result int32 = math.MaxInt32
	pick := func(a, b int32) int32 { return min(a, b) }
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, func(a, b int32) int32 { return max(a, b) }
	}
	for _, p := range rules.Policies {
		start := current - changeWithin(p.PeriodSeconds, ups, now) + changeWithin(p.PeriodSeconds, downs, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

func selectPolicy(r *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if r == nil || r.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *r.SelectPolicy
}

// normalize is upstream's normalizeDesiredReplicas (no behavior): the
// highest recommendation of the downscale window, clamped to min and to
// max or the scale-up limit; it sets AbleToScale and ScalingLimited.
func (c *Controller) normalize(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, desired, minReplicas int32) int32 {
	now := c.Clock.Now()
	stabilized := c.history.stabilize(key, desired, c.opts.DownscaleStabilizationWindow, now)
	if stabilized != desired {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation", now)
	} else {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", now)
	}
	out, reason, msg := clampWithRules(current, stabilized, minReplicas, hpa.Spec.MaxReplicas)
	limited := corev1.ConditionFalse
	if out != stabilized {
		limited = corev1.ConditionTrue
	}
	setCondition(hpa, autoscalingv2.ScalingLimited, limited, reason, msg, now)
	return out
}

// clampWithRules clamps desired to [min, min(max, scale-up limit)] and
// says which bound applied.
func clampWithRules(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	limit := int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
	upper, reason, msg := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxReplicas > limit {
		upper, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minReplicas:
		return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > upper:
		return upper, reason, msg
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// normalizeWithBehavior is upstream's normalizeDesiredReplicasWithBehaviors:
// stabilization windows per direction, then the rate policies and min/max.
func (c *Controller) normalizeWithBehavior(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, desired, minReplicas int32) int32 {
	now := c.Clock.Now()
	b := hpa.Spec.Behavior
	up, down := window(b.ScaleUp, 0), window(b.ScaleDown, c.opts.DownscaleStabilizationWindow)
	stabilized, reason, msg := c.history.stabilizeWithBehavior(key, current, desired, up, down, now)
	if stabilized != desired {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, reason, msg, now)
	} else {
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", now)
	}
	out, reason, msg := c.rateLimited(b, key, current, stabilized, minReplicas, hpa.Spec.MaxReplicas, now)
	limited := corev1.ConditionFalse
	if out != stabilized {
		limited = corev1.ConditionTrue
	}
	setCondition(hpa, autoscalingv2.ScalingLimited, limited, reason, msg, now)
	return out
}

// window is a direction's stabilization window, def when unset (a
// scale-down window left unset by an object that skipped defaulting gets
// the controller's downscale window, as upstream).
func window(r *autoscalingv2.HPAScalingRules, def time.Duration) time.Duration {
	if r == nil || r.StabilizationWindowSeconds == nil {
		return def
	}
	return time.Duration(*r.StabilizationWindowSeconds) * time.Second
}

// rateLimited applies the policies of the direction desired moves in, and
// min/max.
func (c *Controller) rateLimited(b *autoscalingv2.HorizontalPodAutoscalerBehavior, key string, current, desired, minReplicas, maxReplicas int32, now time.Time) (int32, string, string) {
	c.history.mu.Lock()
	defer c.history.mu.Unlock()
	ups, downs := c.history.mu.scaleUp[key], c.history.mu.scaleDown[key]
	switch {
	case desired > current:
		limit := max(scaleUpLimit(current, ups, downs, rulesOrDefault(b.ScaleUp, true), now), current)
		upper, reason, msg := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if upper > limit {
			upper, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > upper {
			return upper, reason, msg
		}
	case desired < current:
		limit := min(scaleDownLimit(current, ups, downs, rulesOrDefault(b.ScaleDown, false), now), current)
		lower, reason, msg := minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if lower < limit {
			lower, reason, msg = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < lower {
			return lower, reason, msg
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// rulesOrDefault is r, or upstream's default rules for the direction when
// the object skipped defaulting (the API server fills them in).
func rulesOrDefault(r *autoscalingv2.HPAScalingRules, up bool) *autoscalingv2.HPAScalingRules {
	if r != nil {
		return r
	}
	if up {
		return &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}}
	}
	return &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}}
}
