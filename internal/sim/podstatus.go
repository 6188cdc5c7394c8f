package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setCondition sets a pod condition, keeping its transition time when its
// status did not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason = s, reason
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now})
}

func containerID(pod *corev1.Pod, name string) string {
	return "containerd://" + idHex("container", string(pod.UID)+"/"+name, 64)
}

func imageID(image string) string {
	return image + "@sha256:" + idHex("image", image, 64)
}

// setRunning turns pod's status into that of a pod whose containers all
// started at now: phase Running, IPs, start time, QoS class, ready
// conditions, init containers completed and containers running.
func setRunning(pod *corev1.Pod, podIP, hostIP string, start, now time.Time) {
	st := &pod.Status
	ts := metav1.NewTime(now)
	startTime := metav1.NewTime(start)
	st.Phase = corev1.PodRunning
	st.Reason, st.Message = "", ""
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	st.StartTime = &startTime
	if st.QOSClass == "" {
		st.QOSClass = qosClass(&pod.Spec)
	}
	setCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", ts)
	setCondition(st, corev1.PodInitialized, corev1.ConditionTrue, "", ts)
	setCondition(st, corev1.ContainersReady, corev1.ConditionTrue, "", ts)
	setCondition(st, corev1.PodReady, corev1.ConditionTrue, "", ts)
	setCondition(st, corev1.PodScheduled, corev1.ConditionTrue, "", ts)
	started, notStarted := true, false
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod, c.Name),
			Ready: true, Started: &notStarted,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: startTime, FinishedAt: ts, ContainerID: containerID(pod, c.Name),
			}},
		})
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod, c.Name),
			Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}},
		})
	}
}

// setTerminated marks every container of pod terminated at now with exit
// code 0 and the pod not ready; phase, if not empty, becomes the pod's phase.
func setTerminated(pod *corev1.Pod, phase corev1.PodPhase, readyReason string, now time.Time) {
	st := &pod.Status
	ts := metav1.NewTime(now)
	if phase != "" {
		st.Phase = phase
	}
	notStarted := false
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		startedAt := ts
		if cs.State.Running != nil {
			startedAt = cs.State.Running.StartedAt
		}
		if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: startedAt, FinishedAt: ts, ContainerID: cs.ContainerID,
			}}
		}
		cs.Ready, cs.Started = false, &notStarted
	}
	setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, readyReason, ts)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, readyReason, ts)
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		setCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", ts)
	}
}

// setRejected is the status a kubelet writes when admission refuses a pod.
func setRejected(pod *corev1.Pod, reason, message string) {
	st := &pod.Status
	st.Phase = corev1.PodFailed
	st.Reason = reason
	st.Message = "Pod was rejected: " + message
	if st.QOSClass == "" {
		st.QOSClass = qosClass(&pod.Spec)
	}
}

// qosClass is the pod's QoS class as upstream computes it for ordinary
// containers: Guaranteed when every container's cpu and memory requests
// equal their limits, BestEffort when nothing is requested or limited,
// Burstable otherwise.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[r]
				lim, hasLim := c.Resources.Limits[r]
				if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
					any = true
				}
				if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}
