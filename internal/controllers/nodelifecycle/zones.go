package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// zoneState is upstream's per-zone disruption state.
type zoneState string

const (
	stateNormal            zoneState = "Normal"
	statePartialDisruption zoneState = "PartialDisruption"
	stateFullDisruption    zoneState = "FullDisruption"
)

// zone holds a zone's state and its queue of nodes waiting for a NoExecute
// taint, released at the zone's rate (burst 1, as upstream).
type zone struct {
	state zoneState
	size  int
	rate  float64 // NoExecute taints per second; 0 stops them
	// pending maps node name to the time it was queued.
	pending map[string]time.Time
	// nextAt is when the next taint may be applied.
	nextAt time.Time
}

// computeState is upstream's ComputeZoneState: fully disrupted when no
// node is Ready, partially when more than two are not Ready and they are
// at least the threshold fraction.
func computeState(nodes []*corev1.Node, threshold float64) zoneState {
	ready, notReady := 0, 0
	for _, n := range nodes {
		if _, c := readyCondition(n); c != nil && c.Status == corev1.ConditionTrue {
			ready++
		} else {
			notReady++
		}
	}
	switch {
	case ready == 0 && notReady > 0:
		return stateFullDisruption
	case notReady > 2 && float64(notReady)/float64(ready+notReady) >= threshold:
		return statePartialDisruption
	default:
		return stateNormal
	}
}

// handleDisruption recomputes zone states and rates. When every zone is
// fully disrupted the problem is most likely the controller's own view of
// the cluster (its network), so evictions stop altogether; on leaving that
// mode every node gets a fresh grace period.
func (c *Controller) handleDisruption(byZone map[string][]*corev1.Node, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	allFull := len(byZone) > 0
	states := make(map[string]zoneState, len(byZone))
	for name, nodes := range byZone {
		states[name] = computeState(nodes, c.opts.UnhealthyZoneThreshold)
		if states[name] != stateFullDisruption {
			allFull = false
		}
	}
	if allFull && !c.mu.fullDisruption {
		c.log.Warn("all zones fully disrupted: stopping evictions")
	}
	if !allFull && c.mu.fullDisruption {
		c.log.Info("leaving full disruption: resuming evictions with fresh grace periods")
		for _, h := range c.mu.health {
			h.probeTime = now
		}
	}
	c.mu.fullDisruption = allFull
	for name, nodes := range byZone {
		z := c.mu.zones[name]
		if z == nil {
			z = &zone{pending: map[string]time.Time{}}
			c.mu.zones[name] = z
		}
		if z.state != states[name] && z.state != "" {
			c.log.Info("zone state changed", "zone", name, "from", z.state, "to", states[name])
		}
		z.state, z.size = states[name], len(nodes)
		z.rate = c.rateFor(z.state, z.size, allFull)
	}
	for name := range c.mu.zones {
		if _, ok := byZone[name]; !ok {
			delete(c.mu.zones, name)
		}
	}
}

// rateFor is upstream's setLimiterInZone.
func (c *Controller) rateFor(s zoneState, size int, allFull bool) float64 {
	switch {
	case allFull:
		return 0
	case s == statePartialDisruption && size > c.opts.LargeClusterSizeThreshold:
		return c.opts.SecondaryEvictionRate
	case s == statePartialDisruption:
		return 0
	default:
		return c.opts.EvictionRate
	}
}
