// Package flowcontrol is the API server's API Priority and Fairness:
// upstream's dispatcher (k8s.io/apiserver/pkg/util/flowcontrol: classification
// by FlowSchema, priority levels with nominal and borrowed seats, fair
// queuing with shuffle sharding, metrics and debug dumps) driven by the
// flowcontrol.apiserver.k8s.io/v1 objects this server serves, read from
// its watch caches in-process, and placed in Myriad's filter chain where
// the max-in-flight filter otherwise sits.
//
// What Myriad adds around upstream's dispatcher:
//
//   - ensure.go keeps upstream's mandatory and suggested FlowSchemas and
//     PriorityLevelConfigurations in the API (mandatory ones are always
//     forced back; suggested ones while they carry
//     apf.kubernetes.io/autoupdate-spec: "true").
//   - estimate.go charges a LIST by the bytes the watch cache will really
//     return (cache.Size, known before the work is done) rather than by an
//     object count capped at 10 seats, so a few huge lists cannot take all
//     the CPU; mutating requests keep upstream's watcher fan-out estimate.
//   - reject.go answers 429 at once, before queueing, to expensive
//     requests while the caches are still warming or the heap is past a
//     threshold, and to User-Agents an operator lists in a watched
//     ConfigMap (the emergency brake for a buggy component).
//   - filter.go bridges Myriad's request context to the one upstream's
//     filter reads, signals a watch's initialization when its handler
//     first writes, and writes rejections as metav1.Status.
package flowcontrol
