// Package daemonset is the DaemonSet controller ("daemonset" in
// kube-controller-manager): one pod per eligible node. A node is eligible
// when the pod template's nodeSelector and required node affinity match it
// and it has no NoSchedule/NoExecute taint the pod does not tolerate (a pod
// already there keeps running unless a NoExecute taint is untolerated).
// Pods get upstream's default DaemonSet tolerations (not-ready and
// unreachable NoExecute; disk/memory/pid-pressure and unschedulable
// NoSchedule; network-unavailable for hostNetwork pods) and are pinned to
// their node the way upstream does it: the required node affinity is
// replaced with a matchFields term on metadata.name, and the scheduler
// binds them.
//
// Updates: RollingUpdate deletes old pods (those whose
// controller-revision-hash label is not the current template's) at most
// maxUnavailable at a time, counting already unavailable pods; the
// replacement is created once the old pod is gone (a node never runs two
// daemon pods at once). With maxSurge > 0 a new pod starts beside the
// old one instead, at most maxSurge nodes at a time (plus nodes whose old
// pod is unavailable, within maxUnavailable), and the old pod is deleted
// once the new one is available. Nodes are walked by name. OnDelete only
// replaces pods the user deletes. Status carries desired/current/misscheduled/ready/
// available/unavailable/updated counts and observedGeneration.
//
// Simplifications against upstream: the revision hash is the template hash
// (podcontrol.ComputeHash) rather than a ControllerRevision, which Myriad's
// API does not serve yet, so `kubectl rollout history/undo daemonset` have
// nothing to read; failed pods are replaced without upstream's
// per-node backoff.
package daemonset
