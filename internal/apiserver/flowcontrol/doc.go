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
//     object count, capped at its level's largest request; mutating
//     requests keep upstream's watcher fan-out estimate.
//   - gate.go bounds the bytes of big LIST answers in flight to the
//     machine's budget (cores × 4 MiB) before APF classifies them: how
//     many 12 MB lists run at once, not their seats, is what slows every
//     other request (their buffers and the garbage collection they cause),
//     and seats wide enough to say so would block a level's small
//     requests behind them. Users take turns at the gate, so one client's
//     forty lists do not queue another's one list forty deep.
//   - reject.go answers 429 at once, before queueing, to expensive
//     requests while the caches are still warming or the heap is past a
//     threshold, and to User-Agents an operator lists in a watched
//     ConfigMap (the emergency brake for a buggy component).
//   - filter.go bridges Myriad's request context to the one upstream's
//     filter reads, signals a watch's initialization when its handler
//     first writes, and writes rejections as metav1.Status.
package flowcontrol
