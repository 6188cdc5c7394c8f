package pvbinder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type pvOpt func(*corev1.PersistentVolume)

func newPV(name, size, class string, opts ...pvOpt) *corev1.PersistentVolume {
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			VolumeMode:                    &fs,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func modes(m ...corev1.PersistentVolumeAccessMode) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = m }
}

func claimRef(ns, name, uid string) pvOpt {
	return func(pv *corev1.PersistentVolume) {
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: types.UID(uid)}
	}
}

func phase(p corev1.PersistentVolumePhase) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Status.Phase = p }
}

func pvLabels(l map[string]string) pvOpt {
	return func(pv *corev1.PersistentVolume) { pv.Labels = l }
}

func block(pv *corev1.PersistentVolume) {
	b := corev1.PersistentVolumeBlock
	pv.Spec.VolumeMode = &b
}

type pvcOpt func(*corev1.PersistentVolumeClaim)

func newPVC(name, size string, class *string, opts ...pvcOpt) *corev1.PersistentVolumeClaim {
	fs := corev1.PersistentVolumeFilesystem
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			StorageClassName: class,
			VolumeMode:       &fs,
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, o := range opts {
		o(pvc)
	}
	return pvc
}

func str(s string) *string { return &s }

func TestFindBestMatch(t *testing.T) {
	manual := str("manual")
	selector := func(pvc *corev1.PersistentVolumeClaim) {
		pvc.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}}
	}
	rwx := func(pvc *corev1.PersistentVolumeClaim) {
		pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	}
	tests := []struct {
		name    string
		pvc     *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		delay   bool
		want    string
	}{
		{"smallest that fits", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("big", "10Gi", "manual"), newPV("small", "2Gi", "manual"), newPV("tiny", "500Mi", "manual")}, false, "small"},
		{"class must be equal", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("other", "2Gi", "fast"), newPV("none", "2Gi", "")}, false, ""},
		{"no class matches classless volumes", newPVC("c", "1Gi", str("")), []*corev1.PersistentVolume{newPV("other", "2Gi", "fast"), newPV("none", "3Gi", "")}, false, "none"},
		{"access modes must be a superset", newPVC("c", "1Gi", manual, rwx), []*corev1.PersistentVolume{newPV("rwo", "2Gi", "manual"), newPV("rwx", "5Gi", "manual", modes(corev1.ReadWriteOnce, corev1.ReadWriteMany))}, false, "rwx"},
		{"fewest modes before smallest", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("two-modes", "2Gi", "manual", modes(corev1.ReadWriteOnce, corev1.ReadOnlyMany)), newPV("one-mode", "8Gi", "manual")}, false, "one-mode"},
		{"volume mode must be equal", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("blk", "2Gi", "manual", block)}, false, ""},
		{"selector matches labels", newPVC("c", "1Gi", manual, selector), []*corev1.PersistentVolume{newPV("plain", "2Gi", "manual"), newPV("fast", "4Gi", "manual", pvLabels(map[string]string{"tier": "fast"}))}, false, "fast"},
		{"claimed by another claim is skipped", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("taken", "2Gi", "manual", claimRef("ns", "other", "u"))}, false, ""},
		{"pre-bound to this claim wins over smaller", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("small", "2Gi", "manual"), newPV("mine", "9Gi", "manual", claimRef("ns", "c", ""))}, false, "mine"},
		{"only Available volumes", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("released", "2Gi", "manual", phase(corev1.VolumeReleased)), newPV("pending", "2Gi", "manual", phase(corev1.VolumePending))}, false, ""},
		{"WaitForFirstConsumer: unbound volumes are left to the scheduler", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("free", "2Gi", "manual")}, true, ""},
		{"WaitForFirstConsumer: a volume the scheduler pre-bound", newPVC("c", "1Gi", manual), []*corev1.PersistentVolume{newPV("free", "2Gi", "manual"), newPV("chosen", "3Gi", "manual", claimRef("ns", "c", "uid-c"))}, true, "chosen"},
		{"too small", newPVC("c", "10Gi", manual), []*corev1.PersistentVolume{newPV("small", "5Gi", "manual")}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv, err := FindBestMatch(tt.pvc, tt.volumes, tt.delay)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if pv != nil {
				got = pv.Name
			}
			if got != tt.want {
				t.Errorf("matched %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckVolumeSatisfiesClaim(t *testing.T) {
	manual := str("manual")
	tests := []struct {
		name string
		pv   *corev1.PersistentVolume
		pvc  *corev1.PersistentVolumeClaim
		want string
	}{
		{"fits", newPV("v", "5Gi", "manual"), newPVC("c", "1Gi", manual), ""},
		{"too small", newPV("v", "1Gi", "manual"), newPVC("c", "5Gi", manual), "requested PV is too small"},
		{"class", newPV("v", "5Gi", "fast"), newPVC("c", "1Gi", manual), "storageClassName does not match"},
		{"mode", newPV("v", "5Gi", "manual", block), newPVC("c", "1Gi", manual), "incompatible volumeMode"},
		{"access", newPV("v", "5Gi", "manual", modes(corev1.ReadOnlyMany)), newPVC("c", "1Gi", manual), "incompatible accessMode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckVolumeSatisfiesClaim(tt.pv, tt.pvc)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
