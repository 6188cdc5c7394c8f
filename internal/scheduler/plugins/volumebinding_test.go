package plugins

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// fakeVolumes is a VolumeLister over fixed objects.
type fakeVolumes struct {
	claims  []*v1.PersistentVolumeClaim
	volumes []*v1.PersistentVolume
	classes []*storagev1.StorageClass
}

func (f fakeVolumes) Claim(ns, name string) (*v1.PersistentVolumeClaim, error) {
	for _, c := range f.claims {
		if c.Namespace == ns && c.Name == name {
			return c, nil
		}
	}
	return nil, nil
}

func (f fakeVolumes) Volume(name string) (*v1.PersistentVolume, error) {
	for _, v := range f.volumes {
		if v.Name == name {
			return v, nil
		}
	}
	return nil, nil
}

func (f fakeVolumes) Volumes(class string) ([]*v1.PersistentVolume, error) {
	var out []*v1.PersistentVolume
	for _, v := range f.volumes {
		if v.Spec.StorageClassName == class {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f fakeVolumes) Class(name string) (*storagev1.StorageClass, error) {
	for _, c := range f.classes {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, nil
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func claim(name, size, class, volume string, mutate ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	fs := v1.PersistentVolumeFilesystem
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume, VolumeMode: &fs,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}}}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

// localPV is an Available volume of class with node affinity to host
// (none when host is "").
func localPV(name, size, class, host string, mutate ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	fs := v1.PersistentVolumeFilesystem
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{StorageClassName: class, VolumeMode: &fs,
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}
	if host != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{host}}}}}}}
	}
	for _, m := range mutate {
		m(pv)
	}
	return pv
}

func withClaims(names ...string) podOpt {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: n, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

func TestVolumeBinding(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	local := class("local", noProvisioner, wffc)
	csi := class("csi", "csi.example.com", wffc)
	zoned := class("zoned", "csi.example.com", wffc)
	zoned.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: v1.LabelHostname, Values: []string{"n2"}}}}}
	manual := class("manual", noProvisioner, immediate)
	classes := []*storagev1.StorageClass{local, csi, zoned, manual}
	nodes := []string{"n1", "n2", "n3"}
	now := metav1.Now()
	tests := []struct {
		name      string
		pod       *v1.Pod
		claims    []*v1.PersistentVolumeClaim
		volumes   []*v1.PersistentVolume
		preFilter string            // the PreFilter failure, "" for none
		fits      map[string]string // node → filter reason ("" fits)
		bindOn    string            // node to take VolumeBindings for
		static    map[string]string // claim → volume expected there
		provision []string          // claims expected to be provisioned
	}{
		{name: "missing claim", pod: mkPod("p", "", "", withClaims("data")),
			preFilter: `persistentvolumeclaim "data" not found`},
		{name: "claim being deleted", pod: mkPod("p", "", "", withClaims("data")),
			claims:    []*v1.PersistentVolumeClaim{claim("data", "1Gi", "manual", "pv", func(c *v1.PersistentVolumeClaim) { c.DeletionTimestamp = &now })},
			preFilter: `persistentvolumeclaim "data" is being deleted`},
		{name: "unbound immediate claim", pod: mkPod("p", "", "", withClaims("data")),
			claims: []*v1.PersistentVolumeClaim{claim("data", "1Gi", "manual", "")}, preFilter: msgUnboundImmediate},
		{name: "unbound claim of a missing class is immediate", pod: mkPod("p", "", "", withClaims("data")),
			claims: []*v1.PersistentVolumeClaim{claim("data", "1Gi", "gone", "")}, preFilter: msgUnboundImmediate},
		{name: "bound claim: the volume's node affinity", pod: mkPod("p", "", "", withClaims("data")),
			claims:  []*v1.PersistentVolumeClaim{claim("data", "1Gi", "local", "pv")},
			volumes: []*v1.PersistentVolume{localPV("pv", "5Gi", "local", "n2")},
			fits:    map[string]string{"n1": ReasonNodeConflict, "n2": "", "n3": ReasonNodeConflict}, bindOn: "n2"},
		{name: "bound claim without its volume", pod: mkPod("p", "", "", withClaims("data")),
			claims: []*v1.PersistentVolumeClaim{claim("data", "1Gi", "manual", "gone")},
			fits:   map[string]string{"n1": ReasonPVNotExist}},
		{name: "WaitForFirstConsumer: the node with a matching local volume", pod: mkPod("p", "", "", withClaims("data")),
			claims:  []*v1.PersistentVolumeClaim{claim("data", "1Gi", "local", "")},
			volumes: []*v1.PersistentVolume{localPV("pv-n2", "5Gi", "local", "n2"), localPV("small-n3", "500Mi", "local", "n3")},
			fits:    map[string]string{"n1": ReasonBindConflict, "n2": "", "n3": ReasonBindConflict},
			bindOn:  "n2", static: map[string]string{"data": "pv-n2"}},
		{name: "WaitForFirstConsumer: smallest volume, each claim its own", pod: mkPod("p", "", "", withClaims("a", "b")),
			claims: []*v1.PersistentVolumeClaim{claim("a", "3Gi", "local", ""), claim("b", "1Gi", "local", "")},
			volumes: []*v1.PersistentVolume{localPV("big", "10Gi", "local", "n1"), localPV("mid", "4Gi", "local", "n1"),
				localPV("small", "1Gi", "local", "n1"), localPV("taken", "1Gi", "local", "n1", func(pv *v1.PersistentVolume) {
					pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "other", UID: "x"}
				})},
			fits:   map[string]string{"n1": "", "n2": ReasonBindConflict},
			bindOn: "n1", static: map[string]string{"a": "mid", "b": "small"}},
		{name: "WaitForFirstConsumer: one volume, two claims", pod: mkPod("p", "", "", withClaims("a", "b")),
			claims:  []*v1.PersistentVolumeClaim{claim("a", "1Gi", "local", ""), claim("b", "1Gi", "local", "")},
			volumes: []*v1.PersistentVolume{localPV("only", "5Gi", "local", "n1")},
			fits:    map[string]string{"n1": ReasonBindConflict}},
		{name: "WaitForFirstConsumer: dynamic provisioning fits every node", pod: mkPod("p", "", "", withClaims("data")),
			claims: []*v1.PersistentVolumeClaim{claim("data", "1Gi", "csi", "")},
			fits:   map[string]string{"n1": "", "n2": "", "n3": ""}, bindOn: "n3", provision: []string{"data"}},
		{name: "WaitForFirstConsumer: an existing volume before provisioning", pod: mkPod("p", "", "", withClaims("data")),
			claims:  []*v1.PersistentVolumeClaim{claim("data", "1Gi", "csi", "")},
			volumes: []*v1.PersistentVolume{localPV("pre", "2Gi", "csi", "n1")},
			fits:    map[string]string{"n1": "", "n2": ""}, bindOn: "n1", static: map[string]string{"data": "pre"}},
		{name: "provisioning honours allowedTopologies", pod: mkPod("p", "", "", withClaims("data")),
			claims: []*v1.PersistentVolumeClaim{claim("data", "1Gi", "zoned", "")},
			fits:   map[string]string{"n1": ReasonBindConflict, "n2": ""}, bindOn: "n2", provision: []string{"data"}},
		{name: "a selected node is kept", pod: mkPod("p", "", "", withClaims("data")),
			claims: []*v1.PersistentVolumeClaim{claim("data", "1Gi", "csi", "", func(c *v1.PersistentVolumeClaim) {
				c.Annotations = map[string]string{volumehelpers.AnnSelectedNode: "n3"}
			})},
			fits: map[string]string{"n1": ReasonBindConflict, "n3": ""}, bindOn: "n3"},
		{name: "a pod without claims is not looked at", pod: mkPod("p", "", ""),
			fits: map[string]string{"n1": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			infos := map[string]*framework.NodeInfo{}
			var all []*framework.NodeInfo
			for _, n := range nodes {
				infos[n] = info(mkNode(n, "4", "8Gi"))
				all = append(all, infos[n])
			}
			pi := framework.NewPodInfo(tt.pod)
			st, status := PreFilter(pi, cluster(all))
			if status != nil {
				t.Fatal(status.Reasons)
			}
			if pi.HasClaims {
				status = PreFilterVolumes(st, fakeVolumes{claims: tt.claims, volumes: tt.volumes, classes: classes})
			}
			if got := reasons(status); got != tt.preFilter {
				t.Fatalf("PreFilter %q, want %q", got, tt.preFilter)
			}
			if status != nil {
				if status.Code != framework.UnschedulableAndUnresolvable {
					t.Errorf("PreFilter code %v, want UnschedulableAndUnresolvable", status.Code)
				}
				return
			}
			for node, want := range tt.fits {
				got := st.Filter(infos[node])
				if reasons(got) != want {
					t.Errorf("%s: %q, want %q", node, reasons(got), want)
				}
				if got != nil && got.Code != framework.UnschedulableAndUnresolvable {
					t.Errorf("%s: code %v, want UnschedulableAndUnresolvable", node, got.Code)
				}
			}
			if !pi.HasClaims {
				if st.DependsOnOtherPods() || st.VolumeBindings(infos["n1"].Node) != nil {
					t.Error("a pod without claims has volume work")
				}
				return
			}
			if tt.bindOn == "" {
				return
			}
			b := st.VolumeBindings(infos[tt.bindOn].Node)
			gotStatic := map[string]string{}
			var gotProvision []string
			if b != nil {
				for _, sb := range b.Static {
					gotStatic[sb.PVC.Name] = sb.PV.Name
				}
				for _, c := range b.Provision {
					gotProvision = append(gotProvision, c.Name)
				}
			}
			if len(gotStatic) != len(tt.static) || strings.Join(gotProvision, ",") != strings.Join(tt.provision, ",") {
				t.Fatalf("bindings on %s: static %v provision %v, want %v %v", tt.bindOn, gotStatic, gotProvision, tt.static, tt.provision)
			}
			for c, v := range tt.static {
				if gotStatic[c] != v {
					t.Errorf("claim %s bound to %q, want %q", c, gotStatic[c], v)
				}
			}
		})
	}
}

func reasons(s *framework.Status) string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons, "; ")
}
