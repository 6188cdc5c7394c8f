package registry

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStorageClass(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "storage.k8s.io", "storageclasses")
	sc := &storagev1.StorageClass{ObjectMeta: meta("fast", ""), Provisioner: "ebs.csi.aws.com", Parameters: map[string]string{"type": "gp3"}}
	wantErrs(t, create(r, sc))
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("defaults: %v %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
	row := cells(r, sc)
	if row["Name"] != "fast" || row["Provisioner"] != "ebs.csi.aws.com" || row["ReclaimPolicy"] != "Delete" ||
		row["VolumeBindingMode"] != "Immediate" || row["AllowVolumeExpansion"] != false {
		t.Errorf("row %v", row)
	}
	def := sc.DeepCopy()
	def.Annotations = map[string]string{IsDefaultStorageClassAnnotation: "true"}
	if row := cells(r, def); row["Name"] != "fast (default)" {
		t.Errorf("default class row %v", row)
	}

	tests := []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
	}{
		{name: "no provisioner", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "" }, want: []string{"Required value: provisioner"}},
		{name: "bad provisioner", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "a b" }, want: []string{"Invalid value: provisioner"}},
		{name: "bad reclaim policy", mutate: func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptrTo(corev1.PersistentVolumeReclaimRecycle) },
			want: []string{"Unsupported value: reclaimPolicy"}},
		{name: "bad binding mode", mutate: func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = ptrTo(storagev1.VolumeBindingMode("Later")) },
			want: []string{"Unsupported value: volumeBindingMode"}},
		{name: "empty parameter key", mutate: func(sc *storagev1.StorageClass) { sc.Parameters[""] = "x" }, want: []string{"Invalid value: parameters"}},
		{name: "topology without values", mutate: func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone"}}}}
		}, want: []string{"Required value: allowedTopologies[0].matchLabelExpressions[0].values"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := sc.DeepCopy()
			tt.mutate(bad)
			wantErrs(t, r.Strategy.Validate(t.Context(), bad), tt.want...)
		})
	}

	changed := sc.DeepCopy()
	changed.Provisioner = "other.example.com"
	changed.Parameters = map[string]string{"type": "io2"}
	changed.ReclaimPolicy = ptrTo(corev1.PersistentVolumeReclaimRetain)
	changed.VolumeBindingMode = ptrTo(storagev1.VolumeBindingWaitForFirstConsumer)
	wantErrs(t, update(r, changed, sc), "Forbidden: provisioner", "Forbidden: parameters", "Forbidden: reclaimPolicy", "Invalid value: volumeBindingMode")
	expand := sc.DeepCopy()
	expand.AllowVolumeExpansion = ptrTo(true)
	wantErrs(t, update(r, expand, sc))
}

func TestCSIDriver(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "storage.k8s.io", "csidrivers")
	d := &storagev1.CSIDriver{ObjectMeta: meta("ebs.csi.aws.com", "")}
	wantErrs(t, create(r, d))
	s := d.Spec
	if !*s.AttachRequired || *s.PodInfoOnMount || *s.StorageCapacity || *s.RequiresRepublish || *s.SELinuxMount ||
		*s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy || len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("defaults: %+v", s)
	}
	row := cells(r, d)
	if row["AttachRequired"] != true || row["PodInfoOnMount"] != false || row["TokenRequests"] != "<unset>" || row["Modes"] != "Persistent" {
		t.Errorf("row %v", row)
	}
	tokens := d.DeepCopy()
	tokens.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "gcp"}}
	if row := cells(r, tokens); row["TokenRequests"] != "vault,gcp" {
		t.Errorf("row %v", row)
	}

	tests := []struct {
		name   string
		mutate func(*storagev1.CSIDriver)
		want   []string
	}{
		{name: "name too long", mutate: func(d *storagev1.CSIDriver) { d.Name = strings.Repeat("a", 64) }, want: []string{"Too long: name"}},
		{name: "duplicate audience, short token", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}, {Audience: "a", ExpirationSeconds: ptrTo(int64(60))}}
		}, want: []string{"Duplicate value: spec.tokenRequests[1].audience", "Invalid value: spec.tokenRequests[1].expirationSeconds"}},
		{name: "bad lifecycle mode", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Forever"}
		}, want: []string{"Unsupported value: spec.volumeLifecycleModes"}},
		{name: "bad fsGroupPolicy", mutate: func(d *storagev1.CSIDriver) { d.Spec.FSGroupPolicy = ptrTo(storagev1.FSGroupPolicy("Some")) },
			want: []string{"Unsupported value: spec.fsGroupPolicy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := d.DeepCopy()
			tt.mutate(bad)
			wantErrs(t, r.Strategy.Validate(t.Context(), bad), tt.want...)
		})
	}
	detach := d.DeepCopy()
	detach.Spec.AttachRequired = ptrTo(false)
	wantErrs(t, update(r, detach, d), "Invalid value: spec.attachRequired")
}

func TestCSINode(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "storage.k8s.io", "csinodes")
	n := &storagev1.CSINode{ObjectMeta: meta("node-1", ""), Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", NodeID: "i-123", TopologyKeys: []string{"topology.ebs.csi.aws.com/zone"}},
	}}}
	wantErrs(t, create(r, n))
	if row := cells(r, n); row["Drivers"] != int64(1) {
		t.Errorf("row %v", row)
	}
	bad := n.DeepCopy()
	bad.Spec.Drivers = append(bad.Spec.Drivers, storagev1.CSINodeDriver{Name: "ebs.csi.aws.com"}, storagev1.CSINodeDriver{Name: "x", NodeID: "1", Allocatable: &storagev1.VolumeNodeResources{Count: ptrTo(int32(-1))}})
	wantErrs(t, create(r, bad), "Duplicate value: spec.drivers[1].name", "Required value: spec.drivers[1].nodeID", "Invalid value: spec.drivers[2].allocatable.count")
	moved := n.DeepCopy()
	moved.Spec.Drivers[0].NodeID = "i-456"
	wantErrs(t, update(r, moved, n), "Invalid value: spec.drivers")
	recount := n.DeepCopy()
	recount.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptrTo(int32(25))}
	wantErrs(t, update(r, recount, n))
}

func TestVolumeAttachment(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "storage.k8s.io", "volumeattachments")
	va := &storagev1.VolumeAttachment{ObjectMeta: meta("csi-123", ""), Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "ebs.csi.aws.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptrTo("pv-1")}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	wantErrs(t, create(r, va))
	if va.Status.Attached {
		t.Error("create kept status")
	}
	if row := cells(r, va); row["Attacher"] != "ebs.csi.aws.com" || row["PV"] != "pv-1" || row["Node"] != "node-1" || row["Attached"] != false {
		t.Errorf("row %v", row)
	}
	wantErrs(t, create(r, &storagev1.VolumeAttachment{ObjectMeta: meta("x", "")}),
		"Required value: spec.attacher", "Invalid value: spec.nodeName", "Required value: spec.source")
	both := va.DeepCopy()
	both.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{}
	wantErrs(t, create(r, both), "Forbidden: spec.source")

	moved := va.DeepCopy()
	moved.Spec.NodeName = "node-2"
	wantErrs(t, update(r, moved, va), "Invalid value: spec")
	attached := va.DeepCopy()
	attached.Spec.NodeName = "ignored"
	attached.Status.Attached = true
	attached.Status.AttachError = &storagev1.VolumeError{Message: strings.Repeat("x", 1025)}
	wantErrs(t, updateStatus(r, attached, va), "Too long: status.attachError.message")
	if attached.Spec.NodeName != "node-1" || !attached.Status.Attached {
		t.Errorf("status update: %+v", attached)
	}
}

func TestCSIStorageCapacityAndVolumeAttributesClass(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "storage.k8s.io", "csistoragecapacities")
	q := resource.MustParse("100Gi")
	c := &storagev1.CSIStorageCapacity{ObjectMeta: meta("cap-1", "kube-system"), StorageClassName: "fast", Capacity: &q,
		NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}
	wantErrs(t, create(r, c))
	if row := cells(r, c); row["StorageClassName"] != "fast" || row["Capacity"] != "100Gi" {
		t.Errorf("row %v", row)
	}
	if row := cells(r, &storagev1.CSIStorageCapacity{}); row["Capacity"] != "<unset>" {
		t.Errorf("row %v", row)
	}
	neg := resource.MustParse("-1")
	bad := c.DeepCopy()
	bad.StorageClassName = "Fast!"
	bad.MaximumVolumeSize = &neg
	wantErrs(t, create(r, bad), "Invalid value: storageClassName", "Invalid value: maximumVolumeSize")
	moved := c.DeepCopy()
	moved.StorageClassName = "slow"
	wantErrs(t, update(r, moved, c), "Invalid value: storageClassName")

	vr := mustLookup(t, reg, "storage.k8s.io", "volumeattributesclasses")
	vac := &storagev1.VolumeAttributesClass{ObjectMeta: meta("gold", ""), DriverName: "ebs.csi.aws.com", Parameters: map[string]string{"iops": "3000"}}
	wantErrs(t, create(vr, vac))
	if row := cells(vr, vac); row["DriverName"] != "ebs.csi.aws.com" {
		t.Errorf("row %v", row)
	}
	wantErrs(t, create(vr, &storagev1.VolumeAttributesClass{ObjectMeta: meta("x", "")}), "Required value: driverName", "Required value: parameters")
	changed := vac.DeepCopy()
	changed.DriverName = "other.example.com"
	changed.Parameters["iops"] = "6000"
	wantErrs(t, update(vr, changed, vac), "Forbidden: driverName", "Forbidden: parameters")
}

// TestNetworkingNodeStorageColumns pins the printer columns of the networking, node and
// storage resources to upstream's (kubectl get headers).
func TestNetworkingNodeStorageColumns(t *testing.T) {
	reg := newTestRegistry(t)
	tests := []struct {
		group, resource string
		want            string
	}{
		{"networking.k8s.io", "ingresses", "Name,Class,Hosts,Address,Ports,Age"},
		{"networking.k8s.io", "ingressclasses", "Name,Controller,Parameters,Age"},
		{"networking.k8s.io", "networkpolicies", "Name,Pod-Selector,Age"},
		{"node.k8s.io", "runtimeclasses", "Name,Handler,Age"},
		{"storage.k8s.io", "storageclasses", "Name,Provisioner,ReclaimPolicy,VolumeBindingMode,AllowVolumeExpansion,Age"},
		{"storage.k8s.io", "csidrivers", "Name,AttachRequired,PodInfoOnMount,StorageCapacity,TokenRequests,RequiresRepublish,Modes,Age"},
		{"storage.k8s.io", "csinodes", "Name,Drivers,Age"},
		{"storage.k8s.io", "volumeattachments", "Name,Attacher,PV,Node,Attached,Age"},
		{"storage.k8s.io", "csistoragecapacities", "Name,StorageClassName,Capacity,Age"},
		{"storage.k8s.io", "volumeattributesclasses", "Name,DriverName,Age"},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			r := mustLookup(t, reg, tt.group, tt.resource)
			if got := strings.Join(columnNames(r), ","); got != tt.want {
				t.Errorf("columns %s, want %s", got, tt.want)
			}
			if age := cells(r, r.New())["Age"]; age != "<unknown>" {
				t.Errorf("age of an object without a timestamp %v", age)
			}
		})
	}
}
