package proxy

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// categorize decides which endpoints cluster-policy and local-policy traffic
// use, exactly as upstream's CategorizeEndpoints (pkg/proxy/topology.go):
// ready endpoints (narrowed by topology hints when every ready endpoint has
// one for this node or zone), falling back to serving-terminating endpoints
// when no ready one remains.
func categorize(eps []Endpoint, sp *ServicePort, nodeName, zone string) (cluster, local []Endpoint, hasAny bool) {
	if len(eps) == 0 {
		return nil, nil, false
	}
	if sp.UsesClusterEndpoints() {
		mode := topologyMode(eps, nodeName, zone)
		cluster = filter(eps, func(e Endpoint) bool { return e.Ready && availableForTopology(e, mode, nodeName, zone) })
		if len(cluster) == 0 {
			cluster = filter(eps, func(e Endpoint) bool { return e.Serving && e.Terminating })
		}
		hasAny = len(cluster) > 0
	}
	if !sp.UsesLocalEndpoints() {
		return cluster, nil, hasAny
	}
	var localReady, localTerminating bool
	for _, e := range eps {
		switch {
		case e.Ready:
			hasAny = true
			localReady = localReady || e.Local
		case e.Serving && e.Terminating:
			hasAny = true
			localTerminating = localTerminating || e.Local
		}
	}
	switch {
	case localReady:
		local = filter(eps, func(e Endpoint) bool { return e.Local && e.Ready })
	case localTerminating:
		local = filter(eps, func(e Endpoint) bool { return e.Local && e.Serving && e.Terminating })
	}
	return cluster, local, hasAny
}

// topologyMode returns PreferSameNode, PreferSameZone or "" from the ready
// endpoints' hints (upstream's topologyModeFromHints with the
// PreferSameTrafficDistribution gate on, its default since 1.34).
func topologyMode(eps []Endpoint, nodeName, zone string) string {
	forNode, allNode, forZone, allZone := false, true, false, true
	for _, e := range eps {
		if !e.Ready {
			continue
		}
		if len(e.NodeHints()) == 0 {
			allNode = false
		} else if slices.Contains(e.NodeHints(), nodeName) {
			forNode = true
		}
		if len(e.ZoneHints()) == 0 {
			allZone = false
		} else if slices.Contains(e.ZoneHints(), zone) {
			forZone = true
		}
	}
	switch {
	case allNode && forNode:
		return v1.ServiceTrafficDistributionPreferSameNode
	case allZone && forZone:
		return v1.ServiceTrafficDistributionPreferSameZone
	}
	return ""
}

func availableForTopology(e Endpoint, mode, nodeName, zone string) bool {
	switch mode {
	case "":
		return true
	case v1.ServiceTrafficDistributionPreferSameNode:
		return slices.Contains(e.NodeHints(), nodeName)
	case v1.ServiceTrafficDistributionPreferSameZone:
		return slices.Contains(e.ZoneHints(), zone)
	}
	return false
}

// filter returns the endpoints keep accepts, in order: eps itself when it
// accepts all of them (usually every endpoint is ready), so eps must not
// change afterwards.
func filter(eps []Endpoint, keep func(Endpoint) bool) []Endpoint {
	all := true
	for _, e := range eps {
		all = all && keep(e)
	}
	if all {
		return eps
	}
	out := make([]Endpoint, 0, len(eps))
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}
