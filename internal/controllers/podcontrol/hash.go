package podcontrol

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ComputeHash is upstream's controller.ComputeHash, bit for bit: fnv32a
// over dump.ForHash of the template, then collisionCount's little-endian
// bytes, printed in decimal and encoded with rand.SafeEncodeString. The
// same template therefore gets the same pod-template-hash (and
// ReplicaSet name) here as under kube-controller-manager.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}
