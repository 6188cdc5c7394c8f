package volumeprotection

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/admission/storageprotection"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

var now = metav1.NewTime(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))

func claim(deleting bool, finalizers ...string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "uid-data", Finalizers: finalizers}}
	if deleting {
		pvc.DeletionTimestamp = &now
	}
	return pvc
}

func podUsing(name, node string, vol corev1.VolumeSource, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-" + "name"},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "v", VolumeSource: vol}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

var claimVolume = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}

func TestPVCProtection(t *testing.T) {
	tests := []struct {
		name string
		objs []runtime.Object
		want []string // the claim's finalizers after a sync
	}{
		{"deleting and unused: released", []runtime.Object{claim(true, storageprotection.PVCFinalizer, "other/f")}, []string{"other/f"}},
		{"deleting and used by a scheduled pod: kept", []runtime.Object{claim(true, storageprotection.PVCFinalizer), podUsing("web", "node-1", claimVolume)},
			[]string{storageprotection.PVCFinalizer}},
		{"a finished pod still counts, as upstream", []runtime.Object{claim(true, storageprotection.PVCFinalizer),
			podUsing("done", "node-1", claimVolume, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
			[]string{storageprotection.PVCFinalizer}},
		{"an unscheduled pod does not count", []runtime.Object{claim(true, storageprotection.PVCFinalizer), podUsing("web", "", claimVolume)}, []string{}},
		{"a pod in another namespace does not count", []runtime.Object{claim(true, storageprotection.PVCFinalizer),
			podUsing("web", "node-1", claimVolume, func(p *corev1.Pod) { p.Namespace = "other" })}, []string{}},
		{"a pod using another claim does not count", []runtime.Object{claim(true, storageprotection.PVCFinalizer),
			podUsing("web", "node-1", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "logs"}})}, []string{}},
		{"not deleting: finalizer added", []runtime.Object{claim(false)}, []string{storageprotection.PVCFinalizer}},
		{"not deleting: kept", []runtime.Object{claim(false, storageprotection.PVCFinalizer)}, []string{storageprotection.PVCFinalizer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := NewPVC(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown() // after cancel, which stops the informers
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			defer c.ShutDown()
			f.Start(ctx.Done())
			f.WaitForCacheSync(ctx.Done())
			if err := c.sync(ctx, "ns/data"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tt.want) && len(got.Finalizers)+len(tt.want) > 0 {
				t.Errorf("finalizers %v, want %v", got.Finalizers, tt.want)
			}
		})
	}
}

func TestPodUsesEphemeralClaim(t *testing.T) {
	ephemeralVolume := corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
	owned := func(pod *corev1.Pod) *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "web-v", Namespace: "ns"}}
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr(true)}}
		return pvc
	}
	zero := int64(0)
	running := podUsing("web", "node-1", ephemeralVolume)
	shutDown := podUsing("web", "node-1", ephemeralVolume, func(p *corev1.Pod) { p.DeletionTimestamp = &now; p.DeletionGracePeriodSeconds = &zero })
	if !PodUsesClaim(running, owned(running)) {
		t.Error("a running pod does not use its ephemeral claim")
	}
	if PodUsesClaim(shutDown, owned(shutDown)) {
		t.Error("a shut-down pod still uses its ephemeral claim")
	}
	stranger := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "web-v", Namespace: "ns"}}
	if PodUsesClaim(running, stranger) {
		t.Error("a claim the pod does not own counts as its ephemeral claim")
	}
}

func ptr[T any](v T) *T { return &v }

func TestPVProtection(t *testing.T) {
	volume := func(deleting bool, phase corev1.PersistentVolumePhase, finalizers ...string) *corev1.PersistentVolume {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Finalizers: finalizers}, Status: corev1.PersistentVolumeStatus{Phase: phase}}
		if deleting {
			pv.DeletionTimestamp = &now
		}
		return pv
	}
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		want []string
	}{
		{"deleting and Bound: kept", volume(true, corev1.VolumeBound, storageprotection.PVFinalizer), []string{storageprotection.PVFinalizer}},
		{"deleting and Released: released", volume(true, corev1.VolumeReleased, storageprotection.PVFinalizer), nil},
		{"deleting and Available: released", volume(true, corev1.VolumeAvailable, storageprotection.PVFinalizer), nil},
		{"not deleting: added", volume(false, corev1.VolumeBound), []string{storageprotection.PVFinalizer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.pv)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := NewPV(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Shutdown() // after cancel, which stops the informers
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			defer c.ShutDown()
			f.Start(ctx.Done())
			f.WaitForCacheSync(ctx.Done())
			if err := c.sync(ctx, "pv"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Finalizers)+len(tt.want) > 0 && !slices.Equal(got.Finalizers, tt.want) {
				t.Errorf("finalizers %v, want %v", got.Finalizers, tt.want)
			}
		})
	}
}
