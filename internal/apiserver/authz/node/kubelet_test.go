package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestKubeletWrites replays what an upstream v1.34 kubelet writes over a
// node's life, with the bodies kubemark's kubelet sent Myriad (taken from
// an audit log at level Request): registration, the node-status strategic
// merge patch, its Lease and CSINode, the pod-status patches (with the
// pod's UID as precondition) and the final delete of a terminated pod.
// Every write goes through the Node authorizer and NodeRestriction as the
// node's own identity. test/kubemark runs the kubelet itself.
func TestKubeletWrites(t *testing.T) {
	c := newCluster(t)
	c.waitReady()
	ctx := context.Background()
	admin := c.admin()
	kubelet := c.nodeClient("a")
	mustCreate(t, admin.CoreV1().Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	now := metav1.NewTime(time.Now().Truncate(time.Second))

	// Registration: the kubelet's own labels and annotations, spec and
	// initial status.
	registered, err := kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "a",
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "a", "kubernetes.io/os": "linux",
			},
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec: corev1.NodeSpec{ProviderID: "kubemark://a"},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("3840Mi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime status check may not have completed yet", LastHeartbeatTime: now, LastTransitionTime: now},
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.2"}, {Type: corev1.NodeHostName, Address: "a"}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", ContainerRuntimeVersion: "fakeRuntime://0.1.0", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("registering: %v", err)
	}

	// The status patch kubelet_node_status.go sends (nodeutil.PatchNodeStatus).
	ts := now.UTC().Format(time.RFC3339)
	statusPatch := fmt.Sprintf(`{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],`+
		`"conditions":[{"lastHeartbeatTime":%[1]q,"lastTransitionTime":%[1]q,"message":"kubelet has sufficient memory available","reason":"KubeletHasSufficientMemory","status":"False","type":"MemoryPressure"},`+
		`{"lastHeartbeatTime":%[1]q,"lastTransitionTime":%[1]q,"message":"kubelet has no disk pressure","reason":"KubeletHasNoDiskPressure","status":"False","type":"DiskPressure"},`+
		`{"lastHeartbeatTime":%[1]q,"lastTransitionTime":%[1]q,"message":"kubelet has sufficient PID available","reason":"KubeletHasSufficientPID","status":"False","type":"PIDPressure"},`+
		`{"lastHeartbeatTime":%[1]q,"lastTransitionTime":%[1]q,"message":"kubelet is posting ready status","reason":"KubeletReady","status":"True","type":"Ready"}]}}`, ts)
	n, err := kubelet.CoreV1().Nodes().Patch(ctx, "a", types.StrategicMergePatchType, []byte(statusPatch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("node status patch: %v", err)
	}
	condTypes := []corev1.NodeConditionType{}
	ready := false
	for _, cond := range n.Status.Conditions {
		condTypes = append(condTypes, cond.Type)
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready || len(condTypes) != 4 || condTypes[3] != corev1.NodeReady {
		t.Fatalf("conditions after the patch: %v (ready %v)", condTypes, ready)
	}
	if n.UID != registered.UID || n.Status.NodeInfo.KubeletVersion != "v1.34.4" || len(n.Status.Addresses) != 2 {
		t.Errorf("the patch lost what it did not name: %+v", n.Status)
	}
	// Another node's status is not its to write.
	if _, err := c.nodeClient("b").CoreV1().Nodes().Patch(ctx, "a", types.StrategicMergePatchType, []byte(statusPatch), metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Errorf("node b patching a's status: %v, want 403", err)
	}

	// Its events (client-go's record package): a create, then the
	// correlator's patch of the count when the same event repeats.
	ev, err := kubelet.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "a.1", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "a", UID: types.UID("a"), APIVersion: "v1"},
		Reason:         "NodeReady", Message: "Node a status is now: NodeReady", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kubelet", Host: "a"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("event: %v", err)
	}
	evPatch := fmt.Sprintf(`{"count":2,"lastTimestamp":%q,"message":"Node a status is now: NodeReady"}`, ts)
	ev, err = kubelet.CoreV1().Events("default").Patch(ctx, ev.Name, types.StrategicMergePatchType, []byte(evPatch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("event count patch: %v", err)
	}
	if ev.Count != 2 {
		t.Errorf("event count %d after the patch, want 2", ev.Count)
	}

	// Its Lease, owned by its Node, and the renewals.
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "a", UID: n.UID}}
	lease, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: corev1.NamespaceNodeLease, OwnerReferences: owner},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr("a"), LeaseDurationSeconds: ptr(int32(40)), RenewTime: &metav1.MicroTime{Time: now.Time}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(10 * time.Second)}
	if _, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("lease renewal: %v", err)
	}

	// Its CSINode (csi_plugin.go's initializeCSINode), owned by its Node.
	if _, err := kubelet.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "a", OwnerReferences: owner},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("csinode: %v", err)
	}

	// A pod the scheduler bound to it, and the status manager's patches.
	mustCreate(t, admin.CoreV1().Secrets("ns").Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}})
	pod, err := admin.CoreV1().Pods("ns").Create(ctx, testPod("ns", "p", "a", "s"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := fmt.Sprintf(`{"metadata":{"uid":%[1]q},"status":{"$setElementOrder/conditions":[{"type":"PodReadyToStartContainers"},{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}],`+
		`"conditions":[{"lastProbeTime":null,"lastTransitionTime":%[2]q,"observedGeneration":1,"status":"True","type":"PodReadyToStartContainers"},`+
		`{"lastProbeTime":null,"lastTransitionTime":%[2]q,"observedGeneration":1,"status":"True","type":"Initialized"},`+
		`{"lastProbeTime":null,"lastTransitionTime":%[2]q,"observedGeneration":1,"status":"True","type":"Ready"},`+
		`{"lastProbeTime":null,"lastTransitionTime":%[2]q,"observedGeneration":1,"status":"True","type":"ContainersReady"},{"observedGeneration":1,"type":"PodScheduled"}],`+
		`"containerStatuses":[{"containerID":"fakeRuntime://p_0","image":"busybox","imageID":"busybox","lastState":{},"name":"c","ready":true,"resources":{},"restartCount":0,"state":{"running":{"startedAt":%[2]q}}}],`+
		`"hostIP":"192.0.2.2","hostIPs":[{"ip":"192.0.2.2"}],"observedGeneration":1,"phase":"Running","podIP":"192.168.192.168","podIPs":[{"ip":"192.168.192.168"}],"startTime":%[2]q}}`, pod.UID, ts)
	got, err := kubelet.CoreV1().Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(running), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("pod status patch: %v", err)
	}
	if got.Status.Phase != corev1.PodRunning || got.Status.PodIP != "192.168.192.168" || len(got.Status.Conditions) != 5 || got.Status.ObservedGeneration != 1 {
		t.Fatalf("pod status after the patch: %+v", got.Status)
	}
	// The UID in the patch is a precondition: a pod recreated under the
	// same name must not get its predecessor's status.
	stale := `{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"},"status":{"phase":"Failed"}}`
	if _, err := kubelet.CoreV1().Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(stale), metav1.PatchOptions{}, "status"); !apierrors.IsConflict(err) {
		t.Errorf("status patch with another pod's UID: %v, want 409", err)
	}

	// A graceful delete; the kubelet stops the containers, reports
	// them terminated and removes the pod (grace 0, UID precondition).
	if err := admin.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	terminated := fmt.Sprintf(`{"metadata":{"uid":%[1]q},"status":{"$setElementOrder/conditions":[{"type":"PodReadyToStartContainers"},{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}],`+
		`"conditions":[{"status":"False","type":"PodReadyToStartContainers"},{"reason":"PodCompleted","type":"Initialized"},{"lastTransitionTime":%[2]q,"reason":"PodCompleted","status":"False","type":"Ready"},{"lastTransitionTime":%[2]q,"reason":"PodCompleted","status":"False","type":"ContainersReady"}],`+
		`"containerStatuses":[{"containerID":"fakeRuntime://p_0","image":"busybox","imageID":"busybox","lastState":{},"name":"c","ready":false,"resources":{},"restartCount":0,"state":{"terminated":{"containerID":"fakeRuntime://p_0","exitCode":0,"finishedAt":%[2]q,"startedAt":%[2]q}}}],"phase":"Succeeded"}}`, pod.UID, ts)
	if _, err := kubelet.CoreV1().Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType, []byte(terminated), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("terminated status patch: %v", err)
	}
	if err := kubelet.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
		t.Fatalf("kubelet's final delete: %v", err)
	}
	if _, err := admin.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod after the kubelet's delete: %v, want 404", err)
	}
}

func ptr[T any](v T) *T { return &v }
