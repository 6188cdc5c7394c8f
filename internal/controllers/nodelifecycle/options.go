package nodelifecycle

import "time"

// Options are the node lifecycle controller's knobs; zero fields take the
// kube-controller-manager defaults stated beside them.
type Options struct {
	// GracePeriod (40 s, --node-monitor-grace-period) is how long a node's
	// Lease may go unrenewed before the node is marked Ready=Unknown.
	GracePeriod time.Duration
	// MonitorPeriod (5 s, --node-monitor-period) is how often every node's
	// health is checked.
	MonitorPeriod time.Duration
	// StartupGracePeriod (60 s) is GracePeriod for a node that has never
	// been Ready.
	StartupGracePeriod time.Duration
	// EvictionRate (0.1 nodes/s) is how fast NoExecute taints are applied
	// in a healthy zone; SecondaryEvictionRate (0.01) in a partially
	// disrupted zone of a large cluster.
	EvictionRate, SecondaryEvictionRate float64
	// UnhealthyZoneThreshold (0.55): a zone with more than this fraction of
	// its nodes (and at least 3 of them) not Ready is partially disrupted.
	UnhealthyZoneThreshold float64
	// LargeClusterSizeThreshold (50): a partially disrupted zone with no
	// more nodes than this stops evicting instead of slowing down.
	LargeClusterSizeThreshold int
}

func (o Options) withDefaults() Options {
	if o.GracePeriod == 0 {
		o.GracePeriod = 40 * time.Second
	}
	if o.MonitorPeriod == 0 {
		o.MonitorPeriod = 5 * time.Second
		if o.GracePeriod < 4*o.MonitorPeriod {
			o.MonitorPeriod = o.GracePeriod / 4
		}
	}
	if o.StartupGracePeriod == 0 {
		o.StartupGracePeriod = 60 * time.Second
		if o.StartupGracePeriod < o.GracePeriod {
			o.StartupGracePeriod = o.GracePeriod
		}
	}
	if o.EvictionRate == 0 {
		o.EvictionRate = 0.1
	}
	if o.SecondaryEvictionRate == 0 {
		o.SecondaryEvictionRate = 0.01
	}
	if o.UnhealthyZoneThreshold == 0 {
		o.UnhealthyZoneThreshold = 0.55
	}
	if o.LargeClusterSizeThreshold == 0 {
		o.LargeClusterSizeThreshold = 50
	}
	return o
}
