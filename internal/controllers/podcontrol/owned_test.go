package podcontrol

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

func TestOwnedEvents(t *testing.T) {
	owners := map[types.UID]string{"uid-a": "ns/a", "uid-b": "ns/b"}
	ref := func(uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", UID: uid, Controller: new(true)}}
	}
	pod := func(rv string, refs []metav1.OwnerReference, deleting bool, lbl string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv, OwnerReferences: refs, Labels: map[string]string{"l": lbl}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	tests := []struct {
		name        string
		event       func(h cache.ResourceEventHandler)
		wantKeys    []string
		wantOrphans int
		wantAdds    int // expected creations left of 1 under ns/a
		wantDels    int // expected deletions left of 1 (ns/p) under ns/a
	}{
		{"add owned", func(h cache.ResourceEventHandler) { h.OnAdd(pod("1", ref("uid-a"), false, ""), false) }, []string{"ns/a"}, 0, 0, 1},
		{"add of another's namesake", func(h cache.ResourceEventHandler) { h.OnAdd(pod("1", ref("uid-z"), false, ""), false) }, nil, 0, 1, 1},
		{"add orphan", func(h cache.ResourceEventHandler) { h.OnAdd(pod("1", nil, false, ""), false) }, nil, 1, 1, 1},
		{"add deleting", func(h cache.ResourceEventHandler) { h.OnAdd(pod("1", ref("uid-a"), true, ""), false) }, []string{"ns/a"}, 0, 1, 0},
		{"resync", func(h cache.ResourceEventHandler) {
			h.OnUpdate(pod("1", ref("uid-a"), false, ""), pod("1", ref("uid-a"), false, ""))
		}, nil, 0, 1, 1},
		{"controller changed", func(h cache.ResourceEventHandler) {
			h.OnUpdate(pod("1", ref("uid-a"), false, ""), pod("2", ref("uid-b"), false, ""))
		}, []string{"ns/a", "ns/b"}, 0, 1, 1},
		{"released", func(h cache.ResourceEventHandler) {
			h.OnUpdate(pod("1", ref("uid-a"), false, ""), pod("2", nil, false, ""))
		}, []string{"ns/a"}, 1, 1, 1},
		{"orphan relabelled", func(h cache.ResourceEventHandler) { h.OnUpdate(pod("1", nil, false, "x"), pod("2", nil, false, "y")) }, nil, 1, 1, 1},
		{"orphan unchanged labels", func(h cache.ResourceEventHandler) { h.OnUpdate(pod("1", nil, false, "x"), pod("2", nil, false, "x")) }, nil, 0, 1, 1},
		{"deletion started", func(h cache.ResourceEventHandler) {
			h.OnUpdate(pod("1", ref("uid-a"), false, ""), pod("2", ref("uid-a"), true, ""))
		}, []string{"ns/a"}, 0, 1, 0},
		{"deleted, tombstone", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("1", ref("uid-a"), false, "")})
		}, []string{"ns/a"}, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			q := reconcile.NewLoop(&controllerctx.Context{Clock: clk, Logger: slog.New(slog.DiscardHandler)}, "t",
				func(context.Context, string) error { return nil }, reconcile.Options[string]{})
			defer q.ShutDown()
			exp := NewExpectations(clk)
			exp.Expect("ns/a", 1, []string{"ns/p"})
			orphans := 0
			h := OwnedEvents[*corev1.Pod]{
				Resolve: func(namespace string, r *metav1.OwnerReference) string { return owners[r.UID] },
				Queue:   q,
				Exp:     exp,
				Orphan:  func(*corev1.Pod) { orphans++ },
			}.Handler()
			tc.event(h)
			var keys []string
			for q.Len() > 0 {
				k, _ := q.Get()
				keys = append(keys, k)
				q.Done(k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("queued %v, want %v", keys, tc.wantKeys)
			}
			if orphans != tc.wantOrphans {
				t.Errorf("%d orphan calls, want %d", orphans, tc.wantOrphans)
			}
			if adds, dels := exp.Pending("ns/a"); adds != tc.wantAdds || dels != tc.wantDels {
				t.Errorf("expectations left %d creations, %d deletions; want %d, %d", adds, dels, tc.wantAdds, tc.wantDels)
			}
		})
	}
}
