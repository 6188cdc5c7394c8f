package endpointslice

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/myriad-k8s/myriad/internal/controllers/endpointutil"
)

// changes is what a sync writes.
type changes struct {
	create, update, delete []*discoveryv1.EndpointSlice
}

// group is the endpoints sharing an address type and resolved port list:
// one set of slices each.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   map[string]discoveryv1.Endpoint // by pod name
}

func groupKey(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	b.WriteString(string(at))
	for _, p := range ports {
		fmt.Fprintf(&b, "|%s/%s/%d", deref(p.Name), deref(p.Protocol), deref(p.Port))
	}
	return b.String()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// desired groups the pods' endpoints.
// zoneFunc names the zone of a node ("" when unknown).
type zoneFunc func(node string) string

func desired(svc *corev1.Service, pods []*corev1.Pod, zoneOf zoneFunc) map[string]*group {
	out := map[string]*group{}
	for _, p := range pods {
		at := discoveryv1.AddressTypeIPv4
		if endpointutil.IsIPv6(p.Status.PodIP) {
			at = discoveryv1.AddressTypeIPv6
		}
		ports := make([]discoveryv1.EndpointPort, 0, len(svc.Spec.Ports))
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, ok := endpointutil.Port(p, sp)
			if !ok {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, discoveryv1.EndpointPort{Name: ptr(sp.Name), Port: ptr(port), Protocol: ptr(proto), AppProtocol: sp.AppProtocol})
		}
		sort.Slice(ports, func(i, j int) bool { return deref(ports[i].Name) < deref(ports[j].Name) })
		k := groupKey(at, ports)
		g := out[k]
		if g == nil {
			g = &group{addressType: at, ports: ports, endpoints: map[string]discoveryv1.Endpoint{}}
			out[k] = g
		}
		g.endpoints[p.Name] = endpointFor(svc, p, zoneOf)
	}
	return out
}

// endpointFor is upstream's podToEndpoint: ready means serving and not
// terminating (or the Service publishes not-ready addresses).
func endpointFor(svc *corev1.Service, p *corev1.Pod, zoneOf zoneFunc) discoveryv1.Endpoint {
	serving := endpointutil.Ready(p)
	terminating := p.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{p.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready), Serving: ptr(serving), Terminating: ptr(terminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
	}
	if p.Spec.NodeName != "" {
		ep.NodeName = ptr(p.Spec.NodeName)
		if zoneOf != nil {
			if z := zoneOf(p.Spec.NodeName); z != "" {
				ep.Zone = ptr(z)
			}
		}
	}
	if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name {
		ep.Hostname = ptr(p.Spec.Hostname)
	}
	return ep
}

func endpointKey(ep discoveryv1.Endpoint) string {
	if ep.TargetRef != nil {
		return ep.TargetRef.Name
	}
	return strings.Join(ep.Addresses, ",")
}

// plan compares the wanted endpoints with the existing slices. Slices
// whose endpoints are all unchanged are not touched; changed endpoints are
// rewritten in place; new endpoints go first into slices already being
// updated, then into slices with room, then into new slices.
func plan(svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, max int, zoneOf zoneFunc) changes {
	want := desired(svc, pods, zoneOf)
	labels := sliceLabels(svc)
	byGroup := map[string][]*discoveryv1.EndpointSlice{}
	var ch changes
	for _, s := range existing {
		k := groupKey(s.AddressType, sortedPorts(s.Ports))
		if _, ok := want[k]; !ok {
			ch.delete = append(ch.delete, s)
			continue
		}
		byGroup[k] = append(byGroup[k], s)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g := want[k]
		c := planGroup(g, byGroup[k], labels, max)
		ch.create = append(ch.create, c.create...)
		ch.update = append(ch.update, c.update...)
		ch.delete = append(ch.delete, c.delete...)
	}
	return ch
}

func sortedPorts(ports []discoveryv1.EndpointPort) []discoveryv1.EndpointPort {
	out := slices.Clone(ports)
	sort.Slice(out, func(i, j int) bool { return deref(out[i].Name) < deref(out[j].Name) })
	return out
}

func planGroup(g *group, existing []*discoveryv1.EndpointSlice, labels map[string]string, max int) changes {
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	remaining := maps.Clone(g.endpoints)
	var updated, emptied, untouched []*discoveryv1.EndpointSlice
	for _, s := range existing {
		changed := !maps.Equal(s.Labels, labels)
		kept := make([]discoveryv1.Endpoint, 0, len(s.Endpoints))
		for _, ep := range s.Endpoints {
			k := endpointKey(ep)
			w, ok := remaining[k]
			if !ok {
				changed = true // gone, or a duplicate
				continue
			}
			delete(remaining, k)
			if !apiequality.Semantic.DeepEqual(ep, w) {
				changed = true
			}
			kept = append(kept, w)
		}
		if len(kept) > max {
			changed = true
			for _, ep := range kept[max:] {
				remaining[endpointKey(ep)] = ep
			}
			kept = kept[:max]
		}
		switch {
		case !changed:
			untouched = append(untouched, s)
		case len(kept) == 0:
			emptied = append(emptied, s)
		default:
			s = s.DeepCopy()
			s.Endpoints = kept
			s.Labels = maps.Clone(labels)
			updated = append(updated, s)
		}
	}
	names := slices.Sorted(maps.Keys(remaining))
	take := func(s *discoveryv1.EndpointSlice) {
		for len(names) > 0 && len(s.Endpoints) < max {
			s.Endpoints = append(s.Endpoints, remaining[names[0]])
			names = names[1:]
		}
	}
	for _, s := range updated {
		take(s)
	}
	var ch changes
	for _, s := range emptied {
		if len(names) == 0 {
			ch.delete = append(ch.delete, s)
			continue
		}
		s = s.DeepCopy()
		s.Endpoints = nil
		s.Labels = maps.Clone(labels)
		take(s)
		updated = append(updated, s)
	}
	// Untouched slices with room take the rest before new slices are
	// made, fullest first, so slices stay packed.
	sort.SliceStable(untouched, func(i, j int) bool { return len(untouched[i].Endpoints) > len(untouched[j].Endpoints) })
	for _, s := range untouched {
		if len(names) == 0 || len(s.Endpoints) >= max || len(names) > max-len(s.Endpoints) && len(names) >= max {
			continue
		}
		s = s.DeepCopy()
		take(s)
		updated = append(updated, s)
	}
	for len(names) > 0 {
		s := &discoveryv1.EndpointSlice{AddressType: g.addressType, Ports: g.ports}
		take(s)
		ch.create = append(ch.create, s)
	}
	ch.update = updated
	return ch
}

func ptr[T any](v T) *T { return &v }
