package benchutil

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StoredPod is the i-th of a set of bound, running pods of about 1.5 KB
// stored (managedFields included), like those a ReplicaSet, the scheduler and a kubelet leave
// behind: one of 200 apps, in namespace ns, on one of nodes node names.
func StoredPod(i int, ns string, nodes int) *corev1.Pod {
	app := "app-" + strconv.Itoa(i%200)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%08d", app, i), Namespace: ns,
			UID:               types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			CreationTimestamp: metav1.NewTime(time.Unix(1_790_000_000, 0)),
			Labels:            map[string]string{"app": app, "pod-template-hash": "5d4f8b9c7"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d4f8b9c7",
				UID: types.UID("11111111-0000-0000-0000-000000000000"), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
			// What the API server records for the ReplicaSet controller's
			// create and the kubelet's status writes: a third of the bytes.
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: ptr(metav1.NewTime(time.Unix(1_790_000_000, 0))), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(controllerFields)}},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status",
					Time: ptr(metav1.NewTime(time.Unix(1_790_000_002, 0))), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(kubeletFields)}},
			},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%05d", i%nodes), RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler", ServiceAccountName: "default",
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Containers:                    []corev1.Container{storedContainer(app)},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255),
			HostIP:     fmt.Sprintf("192.168.%d.%d", (i%nodes)>>8&255, (i%nodes)&255),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, RestartCount: 0,
				Image: "registry.example.com/team/" + app + ":v1.2.3", ImageID: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				ContainerID: fmt.Sprintf("containerd://%064d", i)}},
		},
	}
}

// AppContainer is the benchmark pods' one container, as its owner's
// template has it: image, args, env, a port, requests and limits.
func AppContainer(app string) corev1.Container {
	return corev1.Container{
		Name:  "main",
		Image: "registry.example.com/team/" + app + ":v1.2.3",
		Args:  []string{"--port=8080", "--log-level=info"},
		Env:   []corev1.EnvVar{{Name: "POD_NAME", Value: "x"}, {Name: "MODE", Value: "production"}},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
}

// WithTokenMount adds a service account token mount to c, like the one
// upstream's service account admission adds; TokenVolume is the volume it
// mounts.
func WithTokenMount(c corev1.Container) corev1.Container {
	c.VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	return c
}

// TokenVolume is the projected volume WithTokenMount mounts.
func TokenVolume() corev1.Volume {
	return corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}
}

// storedContainer is AppContainer with the defaults the API server fills in.
func storedContainer(app string) corev1.Container {
	c := AppContainer(app)
	c.TerminationMessagePath, c.TerminationMessagePolicy = "/dev/termination-log", corev1.TerminationMessageReadFile
	c.ImagePullPolicy = corev1.PullIfNotPresent
	return c
}

const (
	controllerFields = `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"11111111-0000-0000-0000-000000000000\"}":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:args":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}}},"f:tolerations":{}}}`
	kubeletFields = `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{}}}`
)

func ptr[T any](v T) *T { return &v }
