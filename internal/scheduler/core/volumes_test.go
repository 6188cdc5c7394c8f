package core

import (
	"context"
	"errors"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/scheduler/plugins"
)

// volumes is a VolumeLister over fixed objects.
type volumes struct {
	claims  map[string]*v1.PersistentVolumeClaim
	pvs     []*v1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func (v volumes) Claim(_, name string) (*v1.PersistentVolumeClaim, error) { return v.claims[name], nil }
func (v volumes) Volume(name string) (*v1.PersistentVolume, error) {
	for _, pv := range v.pvs {
		if pv.Name == name {
			return pv, nil
		}
	}
	return nil, nil
}
func (v volumes) Volumes(string) ([]*v1.PersistentVolume, error) { return v.pvs, nil }
func (v volumes) Class(name string) (*storagev1.StorageClass, error) {
	return v.classes[name], nil
}

// volumeBinder records PreBind calls and may fail them.
type volumeBinder struct {
	mu    sync.Mutex
	calls map[string]*plugins.VolumeBindings // pod → bindings
	nodes map[string]string
	err   error
}

func (b *volumeBinder) BindVolumes(_ context.Context, pod *v1.Pod, node string, vb *plugins.VolumeBindings) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls[pod.Name], b.nodes[pod.Name] = vb, node
	return b.err
}

func withClaim(p *v1.Pod, name string) *v1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	return p
}

func TestVolumeBindingInTheLoop(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	cls := "local"
	fs := v1.PersistentVolumeFilesystem
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "uid-data"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &cls, VolumeMode: &fs, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-n2"},
		Spec: v1.PersistentVolumeSpec{StorageClassName: cls, VolumeMode: &fs, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("5Gi")},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"n2"}}}}}}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}
	lister := volumes{claims: map[string]*v1.PersistentVolumeClaim{"data": pvc}, pvs: []*v1.PersistentVolume{pv},
		classes: map[string]*storagev1.StorageClass{cls: {ObjectMeta: metav1.ObjectMeta{Name: cls}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc}}}

	tests := []struct {
		name       string
		pod        *v1.Pod
		binderErr  error
		wantNode   string // "" for not bound
		wantUnsch  string
		wantVolume string // the volume PreBind was asked to bind
	}{
		{name: "WaitForFirstConsumer: onto the volume's node, volume bound first", pod: withClaim(pod("web", "1", 0), "data"), wantNode: "n2", wantVolume: "pv-n2"},
		{name: "missing claim", pod: withClaim(pod("web", "1", 0), "nope"), wantUnsch: `0/3 nodes are available: persistentvolumeclaim "nope" not found.`},
		{name: "PreBind failure leaves the pod unbound", pod: withClaim(pod("web", "1", 0), "data"), binderErr: errors.New("conflict"), wantVolume: "pv-n2"},
		{name: "pods without claims never reach PreBind", pod: pod("plain", "1", 0), wantNode: "any"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vb := &volumeBinder{calls: map[string]*plugins.VolumeBindings{}, nodes: map[string]string{}, err: tt.binderErr}
			h := newHarness(t, Config{Parallelism: 1, EquivalenceClasses: true, Volumes: lister, VolumeBinder: vb})
			for _, n := range []string{"n1", "n2", "n3"} {
				h.c.AddNode(node(n, "4", map[string]string{v1.LabelHostname: n}))
			}
			h.add(tt.pod)
			h.drain(t)
			got := h.r.bound[tt.pod.Name]
			switch {
			case tt.wantNode == "any" && got == "":
				t.Errorf("pod not bound")
			case tt.wantNode != "any" && got != tt.wantNode:
				t.Errorf("bound to %q, want %q", got, tt.wantNode)
			}
			if msg := h.r.unsch[tt.pod.Name]; msg != tt.wantUnsch {
				t.Errorf("unschedulable %q, want %q", msg, tt.wantUnsch)
			}
			b := vb.calls[tt.pod.Name]
			switch {
			case tt.wantVolume == "" && b != nil:
				t.Errorf("PreBind called with %+v", b)
			case tt.wantVolume != "" && (b == nil || len(b.Static) != 1 || b.Static[0].PV.Name != tt.wantVolume || vb.nodes[tt.pod.Name] != "n2"):
				t.Errorf("PreBind %+v on %q, want volume %s on n2", b, vb.nodes[tt.pod.Name], tt.wantVolume)
			}
		})
	}
	if EquivalenceClass(withClaim(pod("a", "1", 0), "data")) != "" {
		t.Error("a pod with a claim has an equivalence class; pods with claims must not be batched")
	}
}
