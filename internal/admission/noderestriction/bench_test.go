package noderestriction

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// BenchmarkAdmit is NodeRestriction's per-request cost on the writes a
// kubelet makes most (a lease renewal, a pod status update) and on a
// write by anyone else.
func BenchmarkAdmit(b *testing.B) {
	p, err := New(Config{Objects: objects{}})
	if err != nil {
		b.Fatal(err)
	}
	a := nodeUser("node-1")
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"}}
	cases := map[string]*admission.Attributes{
		"lease-update": {Operation: admission.Update, Resource: gvrLeases, Namespace: "kube-node-lease", Name: "node-1", Object: lease, OldObject: lease, User: a},
		"pod-status":   {Operation: admission.Update, Resource: gvrPods, Subresource: "status", Namespace: "ns", Name: "p", Object: testPod("p", "node-1"), OldObject: testPod("p", "node-1"), User: a},
		"non-node":     {Operation: admission.Create, Resource: gvrPods, Namespace: "ns", Object: testPod("p", ""), User: &request.User{Name: "system:serviceaccount:kube-system:replicaset-controller"}},
	}
	ctx := context.Background()
	for name, at := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Admit(ctx, at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
