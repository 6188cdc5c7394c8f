package registry

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestNamespace(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "namespaces")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", ResourceVersion: "1"}}
	wantErrs(t, create(r, ns))
	if ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != "team-a" ||
		len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes || ns.Generation != 0 {
		t.Errorf("namespace after create: %+v", ns)
	}
	wantErrs(t, create(r, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}}), "Invalid value: metadata.name")

	// Updates can neither drop the finalizer nor the name label, nor rename.
	upd := ns.DeepCopy()
	upd.Spec.Finalizers = nil
	upd.Labels = nil
	upd.Status.Phase = corev1.NamespaceTerminating
	wantErrs(t, update(r, upd, ns))
	if len(upd.Spec.Finalizers) != 1 || upd.Labels[corev1.LabelMetadataName] != "team-a" || upd.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace after update: %+v", upd)
	}
	renamed := ns.DeepCopy()
	renamed.Name = "team-b"
	wantErrs(t, update(r, renamed, ns), "Invalid value: metadata.name")

	// Status: phase must agree with deletion.
	st := ns.DeepCopy()
	st.Status.Phase = corev1.NamespaceTerminating
	wantErrs(t, updateStatus(r, st, ns), "Invalid value: status.Phase")

	if f := r.SelectableFields(ns); f["status.phase"] != "Active" {
		t.Errorf("fields %v", f)
	}
	ns.CreationTimestamp = metav1.NewTime(testNow.Add(-49 * time.Hour))
	if row := cells(r, ns); row["Name"] != "team-a" || row["Status"] != "Active" || row["Age"] != "2d1h" {
		t.Errorf("row %v", row)
	}
}

func TestNode(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "nodes")
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.0.0/24"},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.10"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
		},
	}
	wantErrs(t, create(r, n))
	// The kubelet registers with status; it is kept on create.
	if n.Status.Allocatable.Cpu().String() != "4" || len(n.Spec.PodCIDRs) != 1 || len(n.Status.Conditions) != 1 {
		t.Errorf("node after create: %+v", n)
	}
	upd := n.DeepCopy()
	upd.Spec.Unschedulable = true
	upd.Spec.PodCIDRs = []string{"10.0.0.0/24"}
	upd.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Sometimes"}}
	wantErrs(t, update(r, upd, n), "Forbidden: spec.podCIDRs", "Unsupported value: spec.taints[0].effect")
	if f := r.SelectableFields(upd); f["spec.unschedulable"] != "true" {
		t.Errorf("fields %v", f)
	}
	row := cells(r, upd)
	if row["Status"] != "Ready,SchedulingDisabled" || row["Roles"] != "control-plane" || row["Version"] != "v1.37.2" ||
		row["Internal-IP"] != "192.168.0.10" || row["External-IP"] != "<none>" || row["OS-Image"] != "<unknown>" {
		t.Errorf("row %v", row)
	}
}

func testService(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestServiceDefaults(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "services")
	s := testService()
	wantErrs(t, create(r, s))
	sp := s.Spec
	if sp.Type != corev1.ServiceTypeClusterIP || sp.SessionAffinity != corev1.ServiceAffinityNone ||
		sp.Ports[0].Protocol != corev1.ProtocolTCP || sp.Ports[0].TargetPort != intstr.FromInt32(80) ||
		*sp.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster || sp.ExternalTrafficPolicy != "" ||
		*sp.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || sp.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("service defaults: %+v", sp)
	}
	lb := testService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
	wantErrs(t, create(r, lb))
	if lb.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || !*lb.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("lb defaults: %+v", lb.Spec)
	}
}

func TestServiceValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "services")
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"valid", func(*corev1.Service) {}, nil},
		{"dns-1035 name", func(s *corev1.Service) { s.Name = "1web" }, []string{"Invalid value: metadata.name"}},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, []string{"Required value: spec.ports"}},
		{"headless needs no ports", func(s *corev1.Service) { s.Spec.Ports = nil; s.Spec.ClusterIP = "None" }, nil},
		{"duplicate ports need names", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Port: 80}}
		}, []string{"Required value: spec.ports[1].name", "Duplicate value: spec.ports[1]"}},
		{"port range", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }, []string{"Invalid value: spec.ports[0].port", "Invalid value: spec.ports[0].targetPort"}},
		{"type", func(s *corev1.Service) { s.Spec.Type = "Magic" }, []string{"Unsupported value: spec.type"}},
		{"external name", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName; s.Spec.Ports = nil }, []string{"Required value: spec.externalName"}},
		{"node port on cluster ip", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30000 }, []string{"Forbidden: spec.ports[0].nodePort"}},
		{"health check port without Local", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, 30001
		}, []string{"Invalid value: spec.healthCheckNodePort"}},
		{"health check port for Local", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, 30001
		}, nil},
		{"health check port range", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, 70000
		}, []string{"Invalid value: spec.healthCheckNodePort"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantErrs(t, create(r, testService(tc.mutate)), tc.want...) })
	}
}

func TestServiceUpdate(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "services")
	old := testService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	wantErrs(t, create(r, old))
	old.Spec.ClusterIP, old.Spec.ClusterIPs, old.Spec.Ports[0].NodePort = "10.96.0.10", []string{"10.96.0.10"}, 30080
	old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}

	// Re-applying the original manifest keeps what the server allocated.
	applied := testService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	wantErrs(t, update(r, applied, old))
	if applied.Spec.ClusterIP != "10.96.0.10" || applied.Spec.Ports[0].NodePort != 30080 || len(applied.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("applied: %+v", applied)
	}
	v6 := old.DeepCopy()
	v6.Spec.ClusterIP, v6.Spec.ClusterIPs, v6.Spec.IPFamilies = "fd00::10", []string{"fd00::10"}, []corev1.IPFamily{corev1.IPv6Protocol}
	reapplied := testService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	wantErrs(t, update(r, reapplied, v6))
	if reapplied.Spec.ClusterIP != "fd00::10" || reapplied.Spec.IPFamilies[0] != corev1.IPv6Protocol {
		t.Errorf("reapplied to IPv6 service: %+v", reapplied.Spec)
	}
	changed := old.DeepCopy()
	changed.Spec.ClusterIP, changed.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
	wantErrs(t, update(r, changed, old), "Invalid value: spec.clusterIPs[0]")

	// The health check node port: kept by a re-apply, immutable while
	// needed, dropped when traffic policy goes back to Cluster.
	local := func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalTrafficPolicy = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal
	}
	lb := old.DeepCopy()
	local(lb)
	lb.Spec.HealthCheckNodePort = 30090
	relb := testService(local)
	wantErrs(t, update(r, relb, lb))
	if relb.Spec.HealthCheckNodePort != 30090 {
		t.Errorf("re-applied LoadBalancer lost its health check port: %+v", relb.Spec)
	}
	moved := lb.DeepCopy()
	moved.Spec.HealthCheckNodePort = 30091
	wantErrs(t, update(r, moved, lb), "Forbidden: spec.healthCheckNodePort")
	toCluster := lb.DeepCopy()
	toCluster.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	wantErrs(t, update(r, toCluster, lb))
	if toCluster.Spec.HealthCheckNodePort != 0 {
		t.Errorf("health check port kept after the switch to Cluster: %d", toCluster.Spec.HealthCheckNodePort)
	}

	st := old.DeepCopy()
	st.Spec.Type = corev1.ServiceTypeClusterIP
	st.Status.LoadBalancer.Ingress = nil
	wantErrs(t, updateStatus(r, st, old))
	if st.Spec.Type != corev1.ServiceTypeNodePort || st.Status.LoadBalancer.Ingress != nil {
		t.Errorf("status update: %+v", st)
	}
}

func TestServiceTable(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "", "services")
	cases := []struct {
		svc  *corev1.Service
		want []interface{}
	}{
		{testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.ClusterIPs = []string{"10.96.0.1"}
			s.Spec.Ports[0].Protocol = corev1.ProtocolTCP
		}), []interface{}{"web", "ClusterIP", "10.96.0.1", "<none>", "80/TCP", "<unknown>", "app=web"}},
		{testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.Ports = []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}
			s.Spec.Selector = nil
		}), []interface{}{"web", "LoadBalancer", "<none>", "<pending>", "80:30080/TCP,53/UDP", "<unknown>", "<none>"}},
		{testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "example.com"
			s.Spec.Ports = nil
		}), []interface{}{"web", "ExternalName", "<none>", "example.com", "<none>", "<unknown>", "app=web"}},
	}
	for _, tc := range cases {
		got := r.Table.Cells(tc.svc)
		for i := range tc.want {
			if got[i] != tc.want[i] {
				t.Errorf("%s: cells %v, want %v", tc.svc.Spec.Type, got, tc.want)
				break
			}
		}
	}
	if f := r.SelectableFields(testService()); f["spec.clusterIP"] != "" || len(f) != 2 {
		t.Errorf("fields %v", f)
	}
}

func TestConfigMapAndSecret(t *testing.T) {
	reg := newTestRegistry(t)
	cmr := mustLookup(t, reg, "", "configmaps")
	big := strings.Repeat("x", maxDataSize)
	cases := []struct {
		name string
		cm   *corev1.ConfigMap
		want []string
	}{
		{"valid", &corev1.ConfigMap{Data: map[string]string{"a.conf": "x"}, BinaryData: map[string][]byte{"b": nil}}, nil},
		{"bad key", &corev1.ConfigMap{Data: map[string]string{"a/b": "x"}}, []string{"Invalid value: data[a/b]"}},
		{"duplicate key", &corev1.ConfigMap{Data: map[string]string{"a": "x"}, BinaryData: map[string][]byte{"a": nil}}, []string{"Invalid value: data[a]"}},
		{"too big", &corev1.ConfigMap{Data: map[string]string{"a": big, "b": "x"}}, []string{"Too long: []"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cm.ObjectMeta = metav1.ObjectMeta{Name: "c", Namespace: "ns"}
			wantErrs(t, create(cmr, tc.cm), tc.want...)
		})
	}
	yes := true
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"a": "1"}, Immutable: &yes}
	upd := old.DeepCopy()
	upd.Data["a"] = "2"
	upd.Immutable = nil
	wantErrs(t, update(cmr, upd, old), "Forbidden: data", "Forbidden: immutable")
	if row := cells(cmr, old); row["Data"] != int64(1) {
		t.Errorf("row %v", row)
	}

	sr := mustLookup(t, reg, "", "secrets")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "1"},
		Data: map[string][]byte{"a": []byte("1")}, StringData: map[string]string{"a": "2", "b": "3"}}
	wantErrs(t, create(sr, s))
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["a"]) != "2" || len(s.Data) != 2 || s.StringData != nil {
		t.Errorf("secret after create: %+v", s)
	}
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns"}, Type: corev1.SecretTypeTLS}
	wantErrs(t, create(sr, tls), "Required value: data[tls.crt]", "Required value: data[tls.key]")
	retyped := s.DeepCopy()
	retyped.Type = corev1.SecretTypeBasicAuth
	wantErrs(t, update(sr, retyped, s), "Invalid value: type", "Required value: data[username]", "Required value: data[password]")
	if f := sr.SelectableFields(s); f["type"] != "Opaque" {
		t.Errorf("fields %v", f)
	}
	if row := cells(sr, s); row["Type"] != "Opaque" || row["Data"] != int64(2) {
		t.Errorf("row %v", row)
	}
}
