package endpointslice

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// lastChangeTriggerTime approximates upstream's TriggerTimeTracker: the
// newest change among the Service's creation and its pods' Ready
// transitions and deletions. Proxies subtract it from the moment their
// rules are in place to report network programming latency
// (kubeproxy_network_programming_duration_seconds). Upstream keeps, per
// Service, the pods seen at the last sync to take the oldest unprocessed
// change; the newest one is what changed last in a burst and needs no state.
//
// A pod that is gone leaves no time behind: when no pod change is newer
// than the trigger time the existing slices already carry, the write must
// answer something else (a pod deleted), and the controller's own clock
// (now, when the sync started) stands in for it.
func lastChangeTriggerTime(svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, now time.Time) time.Time {
	t := newestPodChange(svc, pods)
	for _, s := range existing {
		if prev, err := time.Parse(time.RFC3339Nano, s.Annotations[corev1.EndpointsLastChangeTriggerTime]); err == nil && !t.After(prev) {
			return now
		}
	}
	return t
}

func newestPodChange(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	t := svc.CreationTimestamp.Time
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.LastTransitionTime.After(t) {
				t = c.LastTransitionTime.Time
			}
		}
		if d := p.DeletionTimestamp; d != nil && d.After(t) {
			t = d.Time
		}
	}
	return t
}

// setTriggerTime stamps slices being written with the annotation.
func setTriggerTime(t time.Time, slices ...[]*discoveryv1.EndpointSlice) {
	if t.IsZero() {
		return
	}
	v := t.UTC().Format(time.RFC3339Nano)
	for _, list := range slices {
		for _, s := range list {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[corev1.EndpointsLastChangeTriggerTime] = v
		}
	}
}
