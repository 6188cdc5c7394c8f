package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

func TestStabilize(t *testing.T) {
	cases := []struct {
		name     string
		history  []recommendation
		desired  int32
		want     int32
		wantSize int // history length after: an expired sample's slot is reused
	}{
		{name: "highest within the window holds a scale-down",
			history: []recommendation{{10, ago(6 * time.Minute)}, {8, ago(2 * time.Minute)}}, desired: 5, want: 8, wantSize: 2},
		{name: "expired samples do not count",
			history: []recommendation{{10, ago(6 * time.Minute)}}, desired: 5, want: 5, wantSize: 1},
		{name: "scale-up is never held",
			history: []recommendation{{3, ago(time.Minute)}}, desired: 7, want: 7, wantSize: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.mu.recommendations["k"] = append([]recommendation(nil), tc.history...)
			if got := h.stabilize("k", tc.desired, 5*time.Minute, t0); got != tc.want {
				t.Errorf("stabilized %d, want %d", got, tc.want)
			}
			if n := len(h.mu.recommendations["k"]); n != tc.wantSize {
				t.Errorf("history holds %d samples, want %d", n, tc.wantSize)
			}
		})
	}
}

func TestStabilizeWithBehavior(t *testing.T) {
	cases := []struct {
		name             string
		history          []recommendation
		current, desired int32
		up, down         time.Duration
		want             int32
		wantReason       string
	}{
		{name: "scale-down held by the highest recent", history: []recommendation{{9, ago(time.Minute)}},
			current: 10, desired: 5, down: 5 * time.Minute, want: 9, wantReason: "ScaleDownStabilized"},
		{name: "scale-up held by the lowest recent", history: []recommendation{{3, ago(30 * time.Second)}},
			current: 2, desired: 6, up: time.Minute, down: 5 * time.Minute, want: 3, wantReason: "ScaleUpStabilized"},
		{name: "no window, no hold", history: []recommendation{{9, ago(time.Minute)}},
			current: 10, desired: 5, want: 5, wantReason: "ScaleDownStabilized"},
		{name: "recent higher sample never pushes past current", history: []recommendation{{20, ago(time.Minute)}},
			current: 10, desired: 12, up: 5 * time.Minute, down: 5 * time.Minute, want: 12, wantReason: "ScaleUpStabilized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.mu.recommendations["k"] = append([]recommendation(nil), tc.history...)
			got, reason, _ := h.stabilizeWithBehavior("k", tc.current, tc.desired, tc.up, tc.down, t0)
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got %d (%s), want %d (%s)", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func rules(sel autoscalingv2.ScalingPolicySelect, ps ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{SelectPolicy: &sel, Policies: ps}
}

func pods(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
}

func percent(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: period}
}

func TestScaleLimits(t *testing.T) {
	maxSel, minSel, off := autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect
	cases := []struct {
		name       string
		up         bool
		current    int32
		ups, downs []scaleEvent
		rules      *autoscalingv2.HPAScalingRules
		want       int32
	}{
		{name: "up: default policies from 4", up: true, current: 4, rules: rules(maxSel, pods(4, 15), percent(100, 15)), want: 8},
		{name: "up: default policies from 10, Max", up: true, current: 10, rules: rules(maxSel, pods(4, 15), percent(100, 15)), want: 20},
		{name: "up: Min picks the smaller change", up: true, current: 10, rules: rules(minSel, pods(4, 15), percent(100, 15)), want: 14},
		{name: "up: percent rounds up", up: true, current: 1, rules: rules(maxSel, percent(10, 15)), want: 2},
		{name: "up: recent scale-up counts against the period", up: true, current: 10,
			ups: []scaleEvent{{change: 4, at: ago(10 * time.Second)}}, rules: rules(maxSel, pods(4, 15), percent(100, 15)), want: 12},
		{name: "up: events older than the period do not count", up: true, current: 10,
			ups: []scaleEvent{{change: 4, at: ago(20 * time.Second)}}, rules: rules(maxSel, pods(4, 15)), want: 14},
		{name: "up: disabled", up: true, current: 3, rules: rules(off, pods(4, 15)), want: 3},
		{name: "down: 100% default", current: 10, rules: rules(maxSel, percent(100, 15)), want: 0},
		{name: "down: Max picks the larger change", current: 10, rules: rules(maxSel, pods(2, 60), percent(50, 60)), want: 5},
		{name: "down: Min picks the smaller change", current: 10, rules: rules(minSel, pods(2, 60), percent(50, 60)), want: 8},
		{name: "down: percent rounds down", current: 3, rules: rules(maxSel, percent(50, 60)), want: 1},
		{name: "down: recent scale-down counts against the period", current: 10,
			downs: []scaleEvent{{change: 3, at: ago(30 * time.Second)}}, rules: rules(maxSel, pods(2, 60), percent(50, 60)), want: 6},
		{name: "down: disabled", current: 10, rules: rules(off, pods(2, 60)), want: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got int32
			if tc.up {
				got = scaleUpLimit(tc.current, tc.ups, tc.downs, tc.rules, t0)
			} else {
				got = scaleDownLimit(tc.current, tc.ups, tc.downs, tc.rules, t0)
			}
			if got != tc.want {
				t.Errorf("limit %d, want %d", got, tc.want)
			}
		})
	}
}

// testController is a Controller with only what normalization reads.
func testController(clk *clocktesting.FakeClock) *Controller {
	hc := &Controller{opts: Options{}.withDefaults(), history: newHistory()}
	hc.Clock = clk
	return hc
}

func hpaWith(minR, maxR int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: maxR, Behavior: b}}
	h.Name, h.Namespace = "web", "default"
	return h
}

func condition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range h.Status.Conditions {
		if h.Status.Conditions[i].Type == t {
			return &h.Status.Conditions[i]
		}
	}
	return nil
}

func TestNormalizeWithoutBehavior(t *testing.T) {
	cases := []struct {
		name                  string
		current, desired      int32
		min, max              int32
		want                  int32
		wantLimited           corev1.ConditionStatus
		wantReason, wantAbleR string
	}{
		{name: "within range", current: 3, desired: 5, min: 1, max: 10, want: 5, wantLimited: corev1.ConditionFalse, wantReason: "DesiredWithinRange", wantAbleR: "ReadyForNewScale"},
		{name: "scale-up limit doubles", current: 3, desired: 20, min: 1, max: 10, want: 6, wantLimited: corev1.ConditionTrue, wantReason: "ScaleUpLimit", wantAbleR: "ReadyForNewScale"},
		{name: "scale-up limit at least 4", current: 1, desired: 20, min: 1, max: 10, want: 4, wantLimited: corev1.ConditionTrue, wantReason: "ScaleUpLimit", wantAbleR: "ReadyForNewScale"},
		{name: "max", current: 10, desired: 15, min: 1, max: 12, want: 12, wantLimited: corev1.ConditionTrue, wantReason: "TooManyReplicas", wantAbleR: "ReadyForNewScale"},
		// The initial recommendation (current) holds the scale-down for
		// the downscale window: the controller's first look never shrinks.
		{name: "first scale-down held by the initial recommendation", current: 5, desired: 2, min: 1, max: 10, want: 5, wantLimited: corev1.ConditionFalse, wantReason: "DesiredWithinRange", wantAbleR: "ScaleDownStabilized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := testController(clocktesting.NewFakeClock(t0))
			hc.history.recordInitial("k", tc.current, t0)
			h := hpaWith(tc.min, tc.max, nil)
			got := hc.normalize(h, "k", tc.current, tc.desired, tc.min)
			lim, able := condition(h, autoscalingv2.ScalingLimited), condition(h, autoscalingv2.AbleToScale)
			if got != tc.want || lim.Status != tc.wantLimited || lim.Reason != tc.wantReason || able.Reason != tc.wantAbleR {
				t.Errorf("got %d, ScalingLimited %s/%s, AbleToScale %s; want %d, %s/%s, %s", got, lim.Status, lim.Reason, able.Reason, tc.want, tc.wantLimited, tc.wantReason, tc.wantAbleR)
			}
		})
	}
	t.Run("below min", func(t *testing.T) {
		hc := testController(clocktesting.NewFakeClock(t0))
		h := hpaWith(3, 10, nil)
		if got := hc.normalize(h, "k", 3, 1, 3); got != 3 || condition(h, autoscalingv2.ScalingLimited).Reason != "TooFewReplicas" {
			t.Errorf("got %d, %+v", got, h.Status.Conditions)
		}
	})
}

// TestBehaviorOverTime drives one HPA's recommendations through a scale-down
// policy of 2 pods a minute with no stabilization: the controller removes
// 2, waits out the period, removes 2 more.
func TestBehaviorOverTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	hc := testController(clk)
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   rules(autoscalingv2.MaxChangePolicySelect, pods(4, 15), percent(100, 15)),
		ScaleDown: rules(autoscalingv2.MaxChangePolicySelect, pods(2, 60)),
	}
	b.ScaleUp.StabilizationWindowSeconds = ptr.To(int32(0))
	b.ScaleDown.StabilizationWindowSeconds = ptr.To(int32(0))
	h := hpaWith(1, 20, b)
	current := int32(10)
	hc.history.recordInitial("k", current, clk.Now())
	step := func(desired int32) int32 {
		got := hc.normalizeWithBehavior(h, "k", current, desired, 1)
		hc.history.storeScaleEvent(b, "k", current, got, clk.Now())
		current = got
		return got
	}
	want := []struct {
		after   time.Duration
		desired int32
		want    int32
		reason  string
	}{
		{0, 2, 8, "ScaleDownLimit"},
		{15 * time.Second, 2, 8, "ScaleDownLimit"}, // the period's 2 are spent
		{46 * time.Second, 2, 6, "ScaleDownLimit"}, // 61 s after the first
		{61 * time.Second, 5, 5, "DesiredWithinRange"},
	}
	for i, w := range want {
		clk.Step(w.after)
		if got := step(w.desired); got != w.want || condition(h, autoscalingv2.ScalingLimited).Reason != w.reason {
			t.Fatalf("step %d: got %d (%s), want %d (%s)", i, got, condition(h, autoscalingv2.ScalingLimited).Reason, w.want, w.reason)
		}
	}
	// Scale-up from 5: Pods 4 gives 9, Percent 100 gives 10; Max picks 10.
	clk.Step(15 * time.Second)
	if got := step(20); got != 10 || condition(h, autoscalingv2.ScalingLimited).Reason != "ScaleUpLimit" {
		t.Fatalf("scale-up: got %d (%s), want 10 (ScaleUpLimit)", got, condition(h, autoscalingv2.ScalingLimited).Reason)
	}
	// Within the same 15 s the 5 added count: the limit stays 10.
	clk.Step(5 * time.Second)
	if got := step(20); got != 10 {
		t.Fatalf("second scale-up in the period: got %d, want 10", got)
	}
}

func TestSelectPolicyDisabled(t *testing.T) {
	hc := testController(clocktesting.NewFakeClock(t0))
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   rules(autoscalingv2.MaxChangePolicySelect, pods(4, 15)),
		ScaleDown: rules(autoscalingv2.DisabledPolicySelect, percent(100, 15)),
	}
	b.ScaleUp.StabilizationWindowSeconds = ptr.To(int32(0))
	b.ScaleDown.StabilizationWindowSeconds = ptr.To(int32(0))
	h := hpaWith(1, 20, b)
	if got := hc.normalizeWithBehavior(h, "k", 10, 2, 1); got != 10 || condition(h, autoscalingv2.ScalingLimited).Reason != "ScaleDownLimit" {
		t.Errorf("got %d (%+v), want 10: scale-down disabled", got, h.Status.Conditions)
	}
}

func TestTolerancesFromBehavior(t *testing.T) {
	hc := testController(clocktesting.NewFakeClock(t0))
	h := hpaWith(1, 10, nil)
	if got := hc.tolerancesFor(h); got != (tolerances{0.1, 0.1}) {
		t.Errorf("default %+v", got)
	}
	q := func(s string) *autoscalingv2.HPAScalingRules {
		r := &autoscalingv2.HPAScalingRules{}
		qq := resource.MustParse(s)
		r.Tolerance = &qq
		return r
	}
	h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: q("0.05"), ScaleDown: q("0")}
	if got := hc.tolerancesFor(h); got != (tolerances{0, 0.05}) {
		t.Errorf("from behavior %+v", got)
	}
}
