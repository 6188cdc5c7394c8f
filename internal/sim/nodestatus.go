package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known node labels (k8s.io/api/core/v1 has the names).
const kubeletVersion = "v1.37.2-hollow"

// newNodeObject is the Node a kubelet would register for this node.
func (n *node) newNodeObject(now time.Time) *corev1.Node {
	cfg := &n.s.cfg
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[corev1.LabelHostname] = n.name
	labels[corev1.LabelOSStable] = "linux"
	labels[corev1.LabelArchStable] = "amd64"
	labels[corev1.LabelInstanceTypeStable] = cfg.InstanceType
	labels[corev1.LabelTopologyZone] = cfg.Zones[n.index%len(cfg.Zones)]
	labels[corev1.LabelTopologyRegion] = "sim-region"
	labels[LabelHollowNode] = "true"
	obj := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   n.name,
			Labels: labels,
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  n.cidr.String(),
			PodCIDRs: []string{n.cidr.String()},
			Taints:   append([]corev1.Taint(nil), cfg.Taints...),
		},
	}
	obj.Status = n.desiredStatus(now, nil)
	return obj
}

// desiredStatus is the node's status at now; conditions keep their
// transition times from prev when their status has not changed.
func (n *node) desiredStatus(now time.Time, prev *corev1.NodeStatus) corev1.NodeStatus {
	cfg := &n.s.cfg
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              cfg.CPU,
		corev1.ResourceMemory:           cfg.Memory,
		corev1.ResourcePods:             *resource.NewQuantity(int64(cfg.Pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: cfg.EphemeralStorage,
	}
	ts := metav1.NewTime(now.Truncate(time.Second))
	addr, port := n.kubeletEndpoint()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: ts, LastTransitionTime: ts}
		if prev != nil {
			for _, p := range prev.Conditions {
				if p.Type == t && p.Status == s {
					c.LastTransitionTime = p.LastTransitionTime
				}
			}
		}
		return c
	}
	st := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(),
		Phase:       "",
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: addr},
			{Type: corev1.NodeHostName, Address: n.name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               idHex("machine", n.name, 32),
			SystemUUID:              idHex("system", n.name, 32),
			BootID:                  idHex("boot", n.name, 32),
			KernelVersion:           "6.8.0-hollow",
			OSImage:                 "Myriad hollow node",
			ContainerRuntimeVersion: "containerd://2.1.0",
			KubeletVersion:          kubeletVersion,
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
		Images: nodeImages(cfg.StatusImages),
	}
	return st
}

// nodeImages is a production-like image list: two names (digest and tag)
// and a size per image, about 300 bytes each in JSON.
func nodeImages(count int) []corev1.ContainerImage {
	if count == 0 {
		return nil
	}
	out := make([]corev1.ContainerImage, count)
	for i := range out {
		repo := fmt.Sprintf("registry.example.com/platform/team-%02d/service-image-%03d", i%17, i)
		out[i] = corev1.ContainerImage{
			Names:     []string{repo + "@sha256:" + idHex("image", repo, 64), fmt.Sprintf("%s:v1.%d.%d", repo, i%23, i%7)},
			SizeBytes: int64(50_000_000 + i*1_234_567),
		}
	}
	return out
}

// idHex is a stable hex id of n characters derived from kind and name.
func idHex(kind, name string, n int) string {
	h := sha256.Sum256([]byte(kind + "/" + name))
	return hex.EncodeToString(h[:])[:n]
}

// ensureNode creates the Node, or adopts the one a previous run left and
// writes this run's status into it.
func (n *node) ensureNode(ctx context.Context) error {
	nodes := n.s.client.CoreV1().Nodes()
	now := n.s.cfg.Clock.Now()
	want := n.newNodeObject(now)
	got, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = nodes.Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting existing node: %w", err)
		}
		got.Status = n.desiredStatus(now, &got.Status)
		got, err = nodes.UpdateStatus(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating existing node's status: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("creating node: %w", err)
	}
	got.ManagedFields = nil // unused here; see doc.go, Memory
	n.mu.Lock()
	n.mu.obj = got
	n.mu.lastStatus = now
	n.mu.Unlock()
	return nil
}

// statusTask writes Node status on the node's NodeStatusInterval grid.
func (n *node) statusTask(due time.Time) {
	ctx := n.runCtx()
	if ctx.Err() != nil {
		return
	}
	period := n.s.cfg.NodeStatusInterval
	// The status carries nothing that changes by itself, so it is written
	// when something changed (a recovery, which writes at once) or when the
	// last report is a period old, as the kubelet does. A change write lands
	// off the grid; skipping the slot that follows it only when that slot
	// is under half a period away keeps the write on the node's slot (so
	// nodes recovered together do not write together every period
	// thereafter) and the reported status at most 1.5 periods old.
	n.mu.Lock()
	recent := n.s.cfg.Clock.Since(n.mu.lastStatus) < period/2
	n.mu.Unlock()
	if !recent {
		n.writeStatus(ctx, false)
	}
	n.s.heartbeats.at(n.next(due, period), n.statusTask)
}

// fullStatusTask is the pre-Lease heartbeat: the whole status every
// RenewInterval, its lateness measured like a Lease renewal's.
func (n *node) fullStatusTask(due time.Time) {
	ctx := n.runCtx()
	if ctx.Err() != nil {
		return
	}
	next := n.next(due, n.s.cfg.RenewInterval)
	if !n.fullStatusBeat(ctx, due) {
		n.retryHeartbeat(due, next, 0, n.fullStatusBeat)
	}
	n.s.heartbeats.at(next, n.fullStatusTask)
}

// fullStatusBeat writes one full-status heartbeat; false if it failed and
// should be retried.
func (n *node) fullStatusBeat(ctx context.Context, due time.Time) bool {
	if n.isFailed() {
		return true
	}
	if !n.writeStatus(ctx, true) {
		return false
	}
	n.observeHeartbeat(due)
	return true
}

// next is the due time after due for period: due+period, or the next grid
// slot if that has passed already (so a late node does not pile up
// back-to-back catch-up writes).
func (n *node) next(due time.Time, period time.Duration) time.Time {
	t := due.Add(period)
	if now := n.s.cfg.Clock.Now(); t.Before(now) {
		return n.slot(now, period)
	}
	return t
}

// writeStatus writes the node's status, retrying once on a conflict with a
// fresh copy. It reports whether the write was acknowledged; heartbeat
// says whether it counts as a heartbeat (FullStatusHeartbeat) or a status
// update.
func (n *node) writeStatus(ctx context.Context, heartbeat bool) bool {
	n.mu.Lock()
	if n.mu.failed || n.mu.obj == nil {
		n.mu.Unlock()
		return false
	}
	obj := n.mu.obj.DeepCopy()
	n.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, n.s.cfg.RenewInterval)
	defer cancel()
	nodes := n.s.client.CoreV1().Nodes()
	obj.Status = n.desiredStatus(n.s.cfg.Clock.Now(), &obj.Status)
	got, err := n.s.beats.updateNodeStatus(ctx, obj)
	if apierrors.IsConflict(err) {
		if obj, err = nodes.Get(ctx, n.name, metav1.GetOptions{}); err == nil {
			obj.Status = n.desiredStatus(n.s.cfg.Clock.Now(), &obj.Status)
			got, err = n.s.beats.updateNodeStatus(ctx, obj)
		}
	}
	if apierrors.IsNotFound(err) {
		// Someone deleted the Node: register again, as a kubelet does.
		if err = n.ensureNode(ctx); err == nil {
			n.mu.Lock()
			got = n.mu.obj
			n.mu.Unlock()
		}
	}
	ok := err == nil
	switch {
	case heartbeat && ok:
		n.s.counters.renewals.Add(1)
	case heartbeat:
		n.s.counters.renewalErrors.Add(1)
	case ok:
		n.s.counters.statusUpdates.Add(1)
	default:
		n.s.counters.statusErrors.Add(1)
	}
	n.s.metrics.statusUpdate(heartbeat, ok)
	if !ok {
		if ctx.Err() == nil || n.runCtx().Err() == nil {
			n.s.cfg.Logger.Debug("node status update failed", "node", n.name, "err", err)
		}
		return false
	}
	got.ManagedFields = nil // unused here; see doc.go, Memory
	n.mu.Lock()
	n.mu.obj = got
	n.mu.lastStatus = n.s.cfg.Clock.Now()
	n.mu.Unlock()
	return true
}
