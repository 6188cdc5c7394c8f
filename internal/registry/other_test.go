package registry

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func meta(name, ns string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1"}
}

func TestLease(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "coordination.k8s.io", "leases")
	holder := "node-1"
	l := &coordinationv1.Lease{ObjectMeta: meta("node-1", "kube-node-lease"), Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptrTo(int32(40))}}
	wantErrs(t, create(r, l))
	bad := l.DeepCopy()
	bad.Spec.LeaseDurationSeconds = ptrTo(int32(0))
	bad.Spec.LeaseTransitions = ptrTo(int32(-1))
	bad.Spec.PreferredHolder = &holder
	wantErrs(t, update(r, bad, l), "Invalid value: spec.leaseDurationSeconds", "Invalid value: spec.leaseTransitions", "Forbidden: spec.preferredHolder")
	if row := cells(r, l); row["Holder"] != "node-1" {
		t.Errorf("row %v", row)
	}
}

func TestPersistentVolumes(t *testing.T) {
	reg := newTestRegistry(t)
	pvr := mustLookup(t, reg, "", "persistentvolumes")
	pv := &corev1.PersistentVolume{
		ObjectMeta: meta("pv1", ""),
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany},
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	wantErrs(t, create(pvr, pv))
	if pv.Status.Phase != corev1.VolumePending || !pv.Status.LastPhaseTransitionTime.Time.Equal(testNow) ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("pv after create: %+v", pv)
	}
	wantErrs(t, create(pvr, &corev1.PersistentVolume{ObjectMeta: meta("pv2", "")}),
		"Required value: spec.accessModes", "Required value: spec.capacity", "Unsupported value: spec.capacity", "Required value: spec")
	moved := pv.DeepCopy()
	moved.Spec.HostPath.Path = "/elsewhere"
	wantErrs(t, update(pvr, moved, pv), "Forbidden: spec.persistentvolumesource")
	row := cells(pvr, pv)
	if row["Capacity"] != "10Gi" || row["Access Modes"] != "RWO,RWX" || row["Status"] != "Pending" || row["VolumeAttributesClass"] != "<unset>" {
		t.Errorf("row %v", row)
	}

	pvcr := mustLookup(t, reg, "", "persistentvolumeclaims")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: meta("data", "default"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	wantErrs(t, create(pvcr, pvc))
	if pvc.Status.Phase != corev1.ClaimPending || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("pvc after create: %+v", pvc)
	}
	wantErrs(t, create(pvcr, &corev1.PersistentVolumeClaim{ObjectMeta: meta("x", "default")}),
		"Required value: spec.accessModes", "Required value: spec.resources.requests[storage]")
	bound := pvc.DeepCopy()
	bound.Spec.VolumeName = "pv1"
	wantErrs(t, update(pvcr, bound, pvc))
	grown := pvc.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	wantErrs(t, update(pvcr, grown, pvc), "Forbidden: spec") // not bound yet
	bound.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: bound.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	grown = bound.DeepCopy()
	grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	wantErrs(t, update(pvcr, grown, bound))
	if row := cells(pvcr, bound); row["Status"] != "Bound" || row["Volume"] != "pv1" || row["Capacity"] != "1Gi" || row["Access Modes"] != "RWO" {
		t.Errorf("row %v", row)
	}
}

func TestEvents(t *testing.T) {
	reg := newTestRegistry(t)
	cr := mustLookup(t, reg, "", "events")
	e := &corev1.Event{
		ObjectMeta:     meta("web.1", "default"),
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"},
		Reason:         "Pulled", Message: " pulled image ", Type: corev1.EventTypeNormal,
		Source:        corev1.EventSource{Component: "kubelet", Host: "n1"},
		LastTimestamp: metav1.NewTime(testNow.Add(-time.Minute)), FirstTimestamp: metav1.NewTime(testNow.Add(-time.Hour)), Count: 3,
	}
	wantErrs(t, create(cr, e))
	other := e.DeepCopy()
	other.InvolvedObject.Namespace = "kube-system"
	other.Type = "Fatal"
	wantErrs(t, create(cr, other), "Invalid value: involvedObject.namespace", "Invalid value: type")
	f := cr.SelectableFields(e)
	if f["involvedObject.kind"] != "Pod" || f["reason"] != "Pulled" || f["source"] != "kubelet" || f["type"] != "Normal" {
		t.Errorf("fields %v", f)
	}
	row := cells(cr, e)
	if row["Last Seen"] != "60s" || row["Object"] != "pod/web" || row["Source"] != "kubelet, n1" ||
		row["Message"] != "pulled image" || row["First Seen"] != "60m" || row["Count"] != int64(3) || row["Name"] != "web.1" {
		t.Errorf("row %v", row)
	}

	er := mustLookup(t, reg, "events.k8s.io", "events")
	ne := &eventsv1.Event{
		ObjectMeta: meta("web.2", "default"), EventTime: metav1.NewMicroTime(testNow.Add(-2 * time.Minute)),
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"},
		Reason:    "Scheduled", Action: "Binding", Type: corev1.EventTypeNormal,
		ReportingController: "default-scheduler", ReportingInstance: "sched-1",
	}
	wantErrs(t, create(er, ne))
	wantErrs(t, create(er, &eventsv1.Event{ObjectMeta: meta("x", "default"), DeprecatedCount: 2}),
		"Required value: eventTime", "Invalid value: type", "Invalid value: deprecatedCount", "Required value: reportingController",
		"Required value: reportingInstance", "Required value: action", "Required value: reason")
	changed := ne.DeepCopy()
	changed.Reason = "Other"
	wantErrs(t, update(er, changed, ne), "Invalid value: reason")
	if f := er.SelectableFields(ne); f["regarding.name"] != "web" || f["involvedObject.name"] != "web" || f["reportingController"] != "default-scheduler" {
		t.Errorf("fields %v", f)
	}
	if row := cells(er, ne); row["Last Seen"] != "2m" || row["Count"] != int64(1) || row["Source"] != "default-scheduler, sched-1" {
		t.Errorf("row %v", row)
	}
}

func TestEndpointsAndSlices(t *testing.T) {
	reg := newTestRegistry(t)
	er := mustLookup(t, reg, "", "endpoints")
	ep := &corev1.Endpoints{ObjectMeta: meta("web", "default"), Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "10.0.0.3"}, {IP: "10.0.0.4"}},
		Ports:     []corev1.EndpointPort{{Port: 80}},
	}}}
	wantErrs(t, create(er, ep))
	if ep.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("endpoints defaults %+v", ep.Subsets)
	}
	if row := cells(er, ep); row["Endpoints"] != "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..." {
		t.Errorf("row %v", row)
	}
	bad := ep.DeepCopy()
	bad.Subsets[0].Addresses[0].IP = "127.0.0.1"
	wantErrs(t, create(er, bad), "Invalid value: subsets[0].addresses[0].ip")

	sr := mustLookup(t, reg, "discovery.k8s.io", "endpointslices")
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  meta("web-abc", "default"),
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptrTo(int32(80))}},
	}
	wantErrs(t, create(sr, es))
	if *es.Ports[0].Protocol != corev1.ProtocolTCP || *es.Ports[0].Name != "" {
		t.Errorf("slice defaults %+v", es.Ports)
	}
	bad6 := es.DeepCopy()
	bad6.AddressType = discoveryv1.AddressTypeIPv6
	bad6.Endpoints = append(bad6.Endpoints, discoveryv1.Endpoint{})
	wantErrs(t, update(sr, bad6, es), "Invalid value: addressType", "Invalid value: endpoints[0].addresses[0]", "Required value: endpoints[1].addresses")
	if row := cells(sr, es); row["Ports"] != "80" || row["Endpoints"] != "10.0.0.1" || row["AddressType"] != "IPv4" {
		t.Errorf("row %v", row)
	}
}

func TestPolicyAndScheduling(t *testing.T) {
	reg := newTestRegistry(t)
	pr := mustLookup(t, reg, "policy", "poddisruptionbudgets")
	min := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: meta("web", "default"), Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	pdb.Status.DisruptionsAllowed = 5
	wantErrs(t, create(pr, pdb))
	if pdb.Generation != 1 || pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("pdb after create %+v", pdb)
	}
	both := pdb.DeepCopy()
	both.Spec.MaxUnavailable = ptrTo(intstr.FromString("150%"))
	wantErrs(t, update(pr, both, pdb), "Invalid value: spec", "Invalid value: spec.maxUnavailable")
	if both.Generation != 2 {
		t.Errorf("generation %d", both.Generation)
	}
	if row := cells(pr, pdb); row["Min Available"] != "1" || row["Max Unavailable"] != "N/A" || row["Allowed Disruptions"] != int64(0) {
		t.Errorf("row %v", row)
	}

	cr := mustLookup(t, reg, "scheduling.k8s.io", "priorityclasses")
	pc := &schedulingv1.PriorityClass{ObjectMeta: meta("high", ""), Value: 1000}
	wantErrs(t, create(cr, pc))
	if *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("pc defaults %+v", pc)
	}
	wantErrs(t, create(cr, &schedulingv1.PriorityClass{ObjectMeta: meta("system-mine", ""), Value: 1}), "Forbidden: metadata.name")
	wantErrs(t, create(cr, &schedulingv1.PriorityClass{ObjectMeta: meta("huge", ""), Value: 2000000000}), "Forbidden: value")
	wantErrs(t, create(cr, &schedulingv1.PriorityClass{ObjectMeta: meta("system-node-critical", ""), Value: 2000001000}))
	revalued := pc.DeepCopy()
	revalued.Value = 1
	wantErrs(t, update(cr, revalued, pc), "Forbidden: value")
	if row := cells(cr, pc); row["Value"] != int64(1000) || row["Global-Default"] != false || row["PreemptionPolicy"] != "PreemptLowerPriority" {
		t.Errorf("row %v", row)
	}
}

func TestRBAC(t *testing.T) {
	reg := newTestRegistry(t)
	rr := mustLookup(t, reg, "rbac.authorization.k8s.io", "roles")
	role := &rbacv1.Role{ObjectMeta: meta("system:reader", "default"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	wantErrs(t, create(rr, role))
	wantErrs(t, create(rr, &rbacv1.Role{ObjectMeta: meta("a/b", "default"), Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}}}}),
		"Invalid value: metadata.name", "Required value: rules[0].verbs", "Invalid value: rules[0].nonResourceURLs")
	role.CreationTimestamp = metav1.NewTime(testNow)
	if row := cells(rr, role); row["Created At"] != "2026-01-02T03:04:05Z" {
		t.Errorf("row %v", row)
	}

	cbr := mustLookup(t, reg, "rbac.authorization.k8s.io", "clusterrolebindings")
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: meta("admins", ""),
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "ServiceAccount", Name: "bot", Namespace: "ci"}},
	}
	wantErrs(t, create(cbr, b))
	if b.RoleRef.APIGroup != rbacv1.GroupName || b.Subjects[0].APIGroup != rbacv1.GroupName || b.Subjects[1].APIGroup != "" {
		t.Errorf("binding defaults %+v", b)
	}
	wantErrs(t, create(cbr, &rbacv1.ClusterRoleBinding{ObjectMeta: meta("x", ""), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "bot"}, {Kind: "Robot", Name: "r2"}}}),
		"Unsupported value: roleRef.kind", "Required value: subjects[0].namespace", "Unsupported value: subjects[1].kind")
	re := b.DeepCopy()
	re.RoleRef.Name = "view"
	wantErrs(t, update(cbr, re, b), "Invalid value: roleRef")
	if row := cells(cbr, b); row["Role"] != "ClusterRole/cluster-admin" || row["Users"] != "alice" || row["ServiceAccounts"] != "ci/bot" {
		t.Errorf("row %v", row)
	}
}

func TestQuotaAndLimits(t *testing.T) {
	reg := newTestRegistry(t)
	qr := mustLookup(t, reg, "", "resourcequotas")
	q := &corev1.ResourceQuota{ObjectMeta: meta("q", "default"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}}}
	q.Status.Used = corev1.ResourceList{"pods": resource.MustParse("1")}
	wantErrs(t, create(qr, q))
	if q.Status.Used != nil {
		t.Errorf("quota status kept on create: %+v", q.Status)
	}
	q.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "limits.cpu": resource.MustParse("4"), "requests.cpu": resource.MustParse("2")},
		Used: corev1.ResourceList{"pods": resource.MustParse("1")},
	}
	if row := cells(qr, q); row["Request"] != "pods: 1/10, requests.cpu: 0/2" || row["Limit"] != "limits.cpu: 0/4" {
		t.Errorf("row %v", row)
	}
	neg := q.DeepCopy()
	neg.Status.Used["pods"] = resource.MustParse("-1")
	wantErrs(t, updateStatus(qr, neg, q), "Invalid value: status.used[pods]")

	lr := mustLookup(t, reg, "", "limitranges")
	l := &corev1.LimitRange{ObjectMeta: meta("l", "default"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}}}
	wantErrs(t, create(lr, l))
	it := l.Spec.Limits[0]
	if it.Default.Cpu().String() != "2" || it.DefaultRequest.Cpu().String() != "2" || it.DefaultRequest.Memory().String() != "64Mi" {
		t.Errorf("limit range defaults %+v", it)
	}

	sar := mustLookup(t, reg, "", "serviceaccounts")
	sa := &corev1.ServiceAccount{ObjectMeta: meta("default", "default"), Secrets: []corev1.ObjectReference{{Name: "t"}}}
	wantErrs(t, create(sar, sa))
	if row := cells(sar, sa); row["Secrets"] != int64(1) {
		t.Errorf("row %v", row)
	}
	wantErrs(t, create(sar, &corev1.ServiceAccount{ObjectMeta: meta(strings.Repeat("a", 254), "default")}), "Invalid value: metadata.name")
}
