package registry

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podTable is upstream's printPod (pkg/printers/internalversion).
func podTable(c clock) TableConvertor {
	return table[*corev1.Pod]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
			col("Status", "string", "The aggregate status of the containers in this pod."),
			col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			ageColumn(),
			wide(col("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
			wide(col("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
			wide(col("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
			wide(col("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
		},
		cells: func(p *corev1.Pod) []interface{} { return podCells(c, p) },
	}
}

func isRestartableInit(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func podCells(c clock, pod *corev1.Pod) []interface{} {
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart metav1.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	inits := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		inits[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isRestartableInit(&pod.Spec.InitContainers[i]) {
			total++
		}
	}

	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		if t := st.LastTerminationState.Terminated; t != nil && lastRestart.Before(&t.FinishedAt) {
			lastRestart = t.FinishedAt
		}
		sidecar := isRestartableInit(inits[st.Name])
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
			if t := st.LastTerminationState.Terminated; t != nil && lastSidecarRestart.Before(&t.FinishedAt) {
				lastSidecarRestart = t.FinishedAt
			}
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue
		case sidecar && st.Started != nil && *st.Started:
			if st.Ready {
				ready++
			}
			continue
		case st.State.Terminated != nil:
			t := st.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + st.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			restarts += int(st.RestartCount)
			if t := st.LastTerminationState.Terminated; t != nil && lastRestart.Before(&t.FinishedAt) {
				lastRestart = t.FinishedAt
			}
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				reason = st.State.Waiting.Reason
			case st.State.Terminated != nil && st.State.Terminated.Reason != "":
				reason = st.State.Terminated.Reason
			case st.State.Terminated != nil && st.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", st.State.Terminated.Signal)
			case st.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", st.State.Terminated.ExitCode)
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// A completed container beside a running one is not a completed pod.
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			if podConditionTrue(pod, corev1.PodReady) {
				reason = "Running"
			}
		}
	}

	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && !terminal {
		reason = "Terminating"
	}

	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, c.since(lastRestart))
	}

	podIP := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			if podConditionTrue(pod, g.ConditionType) {
				trueGates++
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, n)
	}
	return []interface{}{
		pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsStr, c.since(pod.CreationTimestamp),
		orNone(podIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates,
	}
}

// podConditionTrue reports whether the pod's first condition of type t is True.
func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == t {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
