package storebench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// newValues returns the value of the i-th object for Config.Values.
func newValues(kind string, size int) (func(i int) []byte, error) {
	switch kind {
	case "", "random":
		return randomValues(size), nil
	case "pods":
		return podValues(size), nil
	}
	return nil, fmt.Errorf("storebench: unknown values %q (random or pods)", kind)
}

// randomValues hands out distinct, incompressible values without generating
// random bytes per write: each value is a window into 4 MiB of random data
// at an offset derived from the object index. One shared value would let the
// engine's block compression shrink the data unrealistically.
func randomValues(size int) func(int) []byte {
	data := make([]byte, 4<<20+size)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	return func(i int) []byte {
		off := int(uint64(i) * 0x9e3779b97f4a7c15 % uint64(len(data)-size+1))
		return data[off : off+size]
	}
}

// podValues encodes, per object, a Pod like a Deployment's (one of 200
// apps, on one of 10,000 nodes, its own name and UID), padded to about
// size bytes with an annotation.
func podValues(size int) func(int) []byte {
	return func(i int) []byte {
		app := fmt.Sprintf("app-%d", i%200)
		h := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:              fmt.Sprintf("%s-5d4f8c9b7-%08x", app, uint32(h)),
				Namespace:         fmt.Sprintf("ns-%03d", i%100),
				UID:               types.UID(fmt.Sprintf("%016x-%08x", h, i)),
				CreationTimestamp: metav1.Unix(1_790_000_000+int64(i), 0),
				Labels:            map[string]string{"app": app, "pod-template-hash": "5d4f8c9b7", "tier": "backend"},
				OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d4f8c9b7", UID: types.UID(fmt.Sprintf("rs-%d", i%200))}},
			},
			Spec: corev1.PodSpec{
				NodeName: fmt.Sprintf("node-%05d", i%10000),
				Containers: []corev1.Container{{
					Name:  "main",
					Image: "registry.example.com/team/" + app + ":v1.2.3",
					Args:  []string{"--port=8080", "--log-level=info"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					},
					TerminationMessagePath: corev1.TerminationMessagePathDefault,
					ImagePullPolicy:        corev1.PullIfNotPresent,
				}},
				RestartPolicy:      corev1.RestartPolicyAlways,
				DNSPolicy:          corev1.DNSClusterFirst,
				ServiceAccountName: "default",
				SchedulerName:      corev1.DefaultSchedulerName,
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
		}
		if pad := size - pod.Size(); pad > 0 {
			pod.Annotations = map[string]string{"example.com/config": strings.Repeat(app+"=on;", pad/(len(app)+4)+1)[:pad]}
		}
		b, err := pod.Marshal()
		if err != nil {
			panic(err) // a Pod built here always encodes
		}
		return b
	}
}
