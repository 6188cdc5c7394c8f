package pvbinder

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// harness is a controller over a fake clientset whose informers run.
type harness struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	c      *Controller
	events *record.FakeRecorder
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clock.RealClock{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	events := record.NewFakeRecorder(100)
	c.recorder = events
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(func() {
		cancel()
		c.Queue.ShutDown()
		f.Shutdown()
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return &harness{t: t, ctx: ctx, client: client, c: c, events: events}
}

// settle syncs every claim and volume, waits for the informers to see the
// writes, and repeats until nothing changes (or 10 passes).
func (h *harness) settle() {
	h.t.Helper()
	for range 10 {
		pvs, _ := h.client.CoreV1().PersistentVolumes().List(h.ctx, metav1.ListOptions{})
		pvcs, _ := h.client.CoreV1().PersistentVolumeClaims("").List(h.ctx, metav1.ListOptions{})
		before := len(h.client.Actions())
		for _, pvc := range pvcs.Items {
			_ = h.c.sync(h.ctx, pvc.Namespace+"/"+pvc.Name)
		}
		for _, pv := range pvs.Items {
			_ = h.c.sync(h.ctx, pv.Name)
		}
		h.waitCaches()
		if writes(h.client.Actions()[before:]) == 0 {
			return
		}
	}
}

func writes(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			n++
		}
	}
	return n
}

// waitCaches waits until the listers hold what the clientset holds.
func (h *harness) waitCaches() {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		pvs, _ := h.client.CoreV1().PersistentVolumes().List(h.ctx, metav1.ListOptions{})
		cached, _ := h.c.volumes.List(labels.Everything())
		if len(cached) != len(pvs.Items) {
			return false, nil
		}
		for i := range pvs.Items {
			got, err := h.c.volumes.Get(pvs.Items[i].Name)
			if err != nil || !equality.Semantic.DeepEqual(got, &pvs.Items[i]) {
				return false, nil
			}
		}
		pvcs, _ := h.client.CoreV1().PersistentVolumeClaims("").List(h.ctx, metav1.ListOptions{})
		cachedClaims, _ := h.c.claims.List(labels.Everything())
		if len(cachedClaims) != len(pvcs.Items) {
			return false, nil
		}
		for i := range pvcs.Items {
			got, err := h.c.claims.PersistentVolumeClaims(pvcs.Items[i].Namespace).Get(pvcs.Items[i].Name)
			if err != nil || !equality.Semantic.DeepEqual(got, &pvcs.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		h.t.Fatal("caches did not catch up")
	}
}

func (h *harness) pv(name string) *corev1.PersistentVolume {
	pv, err := h.client.CoreV1().PersistentVolumes().Get(h.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return pv
}

func (h *harness) pvc(name string) *corev1.PersistentVolumeClaim {
	pvc, err := h.client.CoreV1().PersistentVolumeClaims("ns").Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pvc
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func storageClass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func hasEvent(events []string, want string) bool {
	for _, e := range events {
		if strings.Contains(e, want) {
			return true
		}
	}
	return false
}

func TestStaticBinding(t *testing.T) {
	h := newHarness(t,
		newPV("pv-big", "10Gi", "manual", phase(corev1.VolumePending)),
		newPV("pv-5g", "5Gi", "manual", phase(corev1.VolumePending)),
		newPVC("data", "1Gi", str("manual")),
	)
	h.settle()
	pv, pvc := h.pv("pv-5g"), h.pvc("data")
	if pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID || pv.Spec.ClaimRef.Name != "data" {
		t.Fatalf("pv: phase %s claimRef %+v", pv.Status.Phase, pv.Spec.ClaimRef)
	}
	if pv.Annotations[volumehelpers.AnnBoundByController] != "yes" {
		t.Errorf("pv annotations %v", pv.Annotations)
	}
	if pvc.Spec.VolumeName != "pv-5g" || pvc.Annotations[volumehelpers.AnnBindCompleted] != "yes" || pvc.Annotations[volumehelpers.AnnBoundByController] != "yes" {
		t.Errorf("pvc spec %+v annotations %v", pvc.Spec, pvc.Annotations)
	}
	q := pvc.Status.Capacity[corev1.ResourceStorage]
	if pvc.Status.Phase != corev1.ClaimBound || q.String() != "5Gi" || len(pvc.Status.AccessModes) != 1 {
		t.Errorf("pvc status %+v", pvc.Status)
	}
	if other := h.pv("pv-big"); other.Status.Phase != corev1.VolumeAvailable || other.Spec.ClaimRef != nil {
		t.Errorf("pv-big: phase %s claimRef %v", other.Status.Phase, other.Spec.ClaimRef)
	}
}

func TestPreboundBinding(t *testing.T) {
	tests := []struct {
		name        string
		objs        []runtime.Object
		wantVolume  string
		wantBoundBy bool // the volume's bound-by-controller annotation
		wantEvent   string
	}{
		{"claim names its volume", []runtime.Object{
			newPV("small", "2Gi", "manual"), newPV("named", "9Gi", "manual"),
			newPVC("data", "1Gi", str("manual"), func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "named" }),
		}, "named", true, ""},
		{"volume names its claim", []runtime.Object{
			newPV("small", "2Gi", "manual"), newPV("reserved", "9Gi", "manual", claimRef("ns", "data", "")),
			newPVC("data", "1Gi", str("manual")),
		}, "reserved", false, ""},
		{"named volume that does not fit", []runtime.Object{
			newPV("named", "1Gi", "manual"),
			newPVC("data", "5Gi", str("manual"), func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "named" }),
		}, "", false, `VolumeMismatch Cannot bind to requested volume "named": requested PV is too small`},
		{"named volume bound elsewhere", []runtime.Object{
			newPV("named", "5Gi", "manual", claimRef("ns", "other", "uid-other")),
			newPVC("data", "1Gi", str("manual"), func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "named" }),
		}, "", false, `FailedBinding volume "named" already bound to a different claim.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objs...)
			h.settle()
			pvc := h.pvc("data")
			if tt.wantVolume == "" {
				if pvc.Status.Phase != corev1.ClaimPending {
					t.Errorf("claim phase %s, want Pending", pvc.Status.Phase)
				}
			} else {
				pv := h.pv(tt.wantVolume)
				if pvc.Status.Phase != corev1.ClaimBound || pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef.UID != pvc.UID {
					t.Errorf("claim %s volume %s claimRef %+v", pvc.Status.Phase, pv.Status.Phase, pv.Spec.ClaimRef)
				}
				if got := metav1.HasAnnotation(pv.ObjectMeta, volumehelpers.AnnBoundByController); got != tt.wantBoundBy {
					t.Errorf("bound-by-controller on volume = %v, want %v", got, tt.wantBoundBy)
				}
			}
			if ev := h.drainEvents(); tt.wantEvent != "" && !hasEvent(ev, tt.wantEvent) {
				t.Errorf("events %q, want %q", ev, tt.wantEvent)
			}
		})
	}
}

func TestUnboundClaimEvents(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	immediate := storagev1.VolumeBindingImmediate
	tests := []struct {
		name      string
		objs      []runtime.Object
		wantEvent string
		wantAnn   string // the storage-provisioner annotation
		wantBound bool
	}{
		{"no volume and no class", []runtime.Object{newPVC("data", "1Gi", str(""))},
			"Normal FailedBinding no persistent volumes available for this claim and no storage class is set", "", false},
		{"WaitForFirstConsumer: not bound by the controller", []runtime.Object{
			storageClass("local", NoProvisioner, wffc), newPV("local-pv", "5Gi", "local"), newPVC("data", "1Gi", str("local"))},
			"Normal WaitForFirstConsumer waiting for first consumer to be created before binding", "", false},
		{"WaitForFirstConsumer with a pending pod", []runtime.Object{
			storageClass("local", NoProvisioner, wffc), newPVC("data", "1Gi", str("local")),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}},
			"Normal WaitForPodScheduled waiting for pod web to be scheduled", "", false},
		{"WaitForFirstConsumer: a volume the scheduler chose", []runtime.Object{
			storageClass("local", NoProvisioner, wffc), newPV("local-pv", "5Gi", "local", claimRef("ns", "data", "uid-data")), newPVC("data", "1Gi", str("local"))},
			"", "", true},
		{"Immediate binding by an external provisioner", []runtime.Object{
			storageClass("csi", "csi.example.com", immediate), newPVC("data", "1Gi", str("csi"))},
			"Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'csi.example.com'", "csi.example.com", false},
		{"selected node hands the claim to the provisioner", []runtime.Object{
			storageClass("csi", "csi.example.com", wffc), newPVC("data", "1Gi", str("csi"), func(p *corev1.PersistentVolumeClaim) {
				p.Annotations = map[string]string{volumehelpers.AnnSelectedNode: "node-1"}
			})},
			"Normal ExternalProvisioning", "csi.example.com", false},
		{"class without a provisioner", []runtime.Object{
			storageClass("manual", NoProvisioner, immediate), newPVC("data", "1Gi", str("manual"))},
			"Warning ProvisioningFailed no volume plugin matched name: kubernetes.io/no-provisioner", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objs...)
			h.settle()
			pvc := h.pvc("data")
			if (pvc.Status.Phase == corev1.ClaimBound) != tt.wantBound {
				t.Errorf("claim phase %s, want bound %v", pvc.Status.Phase, tt.wantBound)
			}
			if got := pvc.Annotations[volumehelpers.AnnStorageProvisioner]; got != tt.wantAnn {
				t.Errorf("storage-provisioner annotation %q, want %q", got, tt.wantAnn)
			}
			if ev := h.drainEvents(); tt.wantEvent != "" && !hasEvent(ev, tt.wantEvent) {
				t.Errorf("events %q, want %q", ev, tt.wantEvent)
			}
		})
	}
}

func TestReclaim(t *testing.T) {
	tests := []struct {
		name      string
		pv        *corev1.PersistentVolume
		wantPhase corev1.PersistentVolumePhase // "" means deleted
		wantEvent string
	}{
		{"Retain: Released", newPV("v", "5Gi", "manual"), corev1.VolumeReleased, ""},
		{"Delete hostPath under /tmp: deleted", newPV("v", "5Gi", "manual", deletePolicy, hostPath("/tmp/v")), "", ""},
		{"Delete hostPath elsewhere: Failed", newPV("v", "5Gi", "manual", deletePolicy), corev1.VolumeFailed,
			"Warning VolumeFailedDelete host_path deleter only supports /tmp/.+ but received provided /data/v"},
		{"Delete local: Failed", newPV("v", "5Gi", "manual", deletePolicy, local), corev1.VolumeFailed,
			"Warning VolumeFailedDelete no deletable volume plugin matched"},
		{"Delete CSI: Released for the external deleter", newPV("v", "5Gi", "manual", deletePolicy, csi), corev1.VolumeReleased, ""},
		{"Recycle: Failed", newPV("v", "5Gi", "manual", func(pv *corev1.PersistentVolume) {
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}), corev1.VolumeFailed, "Warning VolumeFailedRecycle No recycler plugin found for the volume!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.pv, newPVC("data", "1Gi", str("manual")))
			h.settle()
			if p := h.pvc("data"); p.Status.Phase != corev1.ClaimBound {
				t.Fatalf("claim %s before deletion", p.Status.Phase)
			}
			if err := h.client.CoreV1().PersistentVolumeClaims("ns").Delete(h.ctx, "data", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			h.waitCaches()
			h.settle()
			pv := h.pv("v")
			switch {
			case tt.wantPhase == "" && pv != nil:
				t.Errorf("volume kept in phase %s, want deleted", pv.Status.Phase)
			case tt.wantPhase != "" && pv == nil:
				t.Errorf("volume deleted, want phase %s", tt.wantPhase)
			case pv != nil && pv.Status.Phase != tt.wantPhase:
				t.Errorf("volume phase %s, want %s", pv.Status.Phase, tt.wantPhase)
			}
			if ev := h.drainEvents(); tt.wantEvent != "" && !hasEvent(ev, tt.wantEvent) {
				t.Errorf("events %q, want %q", ev, tt.wantEvent)
			}
			if pv != nil && tt.wantPhase == corev1.VolumeFailed && pv.Status.Message == "" {
				t.Error("failed volume has no status message")
			}
		})
	}
}

func TestClaimLost(t *testing.T) {
	pvc := newPVC("data", "1Gi", str("manual"), func(p *corev1.PersistentVolumeClaim) {
		p.Spec.VolumeName = "gone"
		p.Annotations = map[string]string{volumehelpers.AnnBindCompleted: "yes"}
		p.Status.Phase = corev1.ClaimBound
	})
	h := newHarness(t, pvc)
	h.settle()
	if got := h.pvc("data").Status.Phase; got != corev1.ClaimLost {
		t.Errorf("phase %s, want Lost", got)
	}
	if ev := h.drainEvents(); !hasEvent(ev, "Warning ClaimLost Bound claim has lost its PersistentVolume. Data on the volume is lost!") {
		t.Errorf("events %q", ev)
	}
}

func deletePolicy(pv *corev1.PersistentVolume) {
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
}

func hostPath(p string) pvOpt {
	return func(pv *corev1.PersistentVolume) {
		pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}
	}
}

func local(pv *corev1.PersistentVolume) {
	pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}
}

func csi(pv *corev1.PersistentVolume) {
	pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h"}}
}
