package node

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/myriad-k8s/myriad/internal/protoprune"
)

// podGraphSkip is what of a Pod's protobuf message (field numbers from
// k8s.io/api/core/v1/generated.proto) podEdgesOf never reads: a restarted
// server's graph lists every pod, and status, managedFields and the
// containers but for their env are most of each one's bytes. Fields a
// newer API adds are kept, so the set can only be too small, never drop
// an edge; TestPrunedPodHasTheSameEdges checks it against whole pods.
var podGraphSkip = protoprune.Fields{
	1: { // metadata: keeps name, namespace and annotations (mirror pods)
		11: nil, // labels
		13: nil, // ownerReferences
		14: nil, // finalizers
		17: nil, // managedFields
	},
	// spec: keeps volumes (1), containers (2), serviceAccountName (8),
	// nodeName (10), imagePullSecrets (15), initContainers (20),
	// ephemeralContainers (34) and resourceClaims (39).
	2: allBut(44, map[protowire.Number]protoprune.Fields{
		1:  nil,
		2:  containerGraphSkip,
		8:  nil,
		10: nil,
		15: nil,
		20: containerGraphSkip,
		34: {1: containerGraphSkip}, // EphemeralContainerCommon
		39: nil,
	}),
	// status: keeps resourceClaimStatuses (15) and
	// extendedResourceClaimStatus (18).
	3: allBut(22, map[protowire.Number]protoprune.Fields{15: nil, 18: nil}),
}

// containerGraphSkip is a Container's fields but name (1), env (7) and
// envFrom (19).
var containerGraphSkip = allBut(25, map[protowire.Number]protoprune.Fields{1: nil, 7: nil, 19: nil})

// allBut is every field numbered 1 to last but those keep names; a
// non-nil value in keep prunes inside that field instead of keeping it
// whole.
func allBut(last protowire.Number, keep map[protowire.Number]protoprune.Fields) protoprune.Fields {
	skip := protoprune.Fields{}
	for n := protowire.Number(1); n <= last; n++ {
		sub, kept := keep[n]
		switch {
		case !kept:
			skip[n] = nil
		case sub != nil:
			skip[n] = sub
		}
	}
	return skip
}
