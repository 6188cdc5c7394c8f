package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func prefixPath(path, svc string, port int32) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: path, PathType: ptrTo(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: port}}}}
}

func ingressWith(paths ...networkingv1.HTTPIngressPath) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: meta("web", "default"), Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}}}}
}

func TestIngressValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "networking.k8s.io", "ingresses")
	tests := []struct {
		name   string
		mutate func(*networkingv1.Ingress)
		want   []string
	}{
		{name: "valid", mutate: func(*networkingv1.Ingress) {}},
		{name: "path without pathType", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths[0].PathType = nil },
			want: []string{"Required value: spec.rules[0].http.paths[0].pathType"}},
		{name: "unknown pathType", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].PathType = ptrTo(networkingv1.PathType("Regex"))
		}, want: []string{"Unsupported value: spec.rules[0].http.paths[0].pathType"}},
		{name: "relative and dotted prefix paths", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths = append(i.Spec.Rules[0].HTTP.Paths, prefixPath("api", "web", 80), prefixPath("/a//b", "web", 80))
		}, want: []string{"Invalid value: spec.rules[0].http.paths[1].path", "Invalid value: spec.rules[0].http.paths[2].path"}},
		{name: "both backends", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}
		}, want: []string{"Invalid value: spec.rules[0].http.paths[0].backend"}},
		{name: "no backend", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{}
		}, want: []string{"Invalid value: spec.rules[0].http.paths[0].backend"}},
		{name: "service without port", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{}
		}, want: []string{"Required value: spec.rules[0].http.paths[0].backend"}},
		{name: "port name and number", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = "http"
		}, want: []string{"Invalid value: spec.rules[0].http.paths[0].backend"}},
		{name: "bad service name and port", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service = &networkingv1.IngressServiceBackend{Name: "Web_1", Port: networkingv1.ServiceBackendPort{Number: 70000}}
		}, want: []string{"Invalid value: spec.rules[0].http.paths[0].backend.service.name", "Invalid value: spec.rules[0].http.paths[0].backend.service.port.number"}},
		{name: "resource backend without kind", mutate: func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Name: "b"}}
		}, want: []string{"Required value: spec.rules[0].http.paths[0].backend.resource.kind"}},
		{name: "IP host", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "10.0.0.1" },
			want: []string{"Invalid value: spec.rules[0].host"}},
		{name: "wildcard host", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "*.example.com" }},
		{name: "no rules nor default backend", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules = nil },
			want: []string{"Invalid value: spec"}},
		{name: "empty http paths", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths = nil },
			want: []string{"Required value: spec.rules[0].http.paths"}},
		{name: "class annotation disagrees", mutate: func(i *networkingv1.Ingress) {
			i.Spec.IngressClassName = ptrTo("nginx")
			i.Annotations = map[string]string{annotationIngressClass: "traefik"}
		}, want: []string{"Invalid value: annotations.kubernetes.io/ingress.class"}},
		{name: "bad tls host", mutate: func(i *networkingv1.Ingress) {
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"Bad_Host"}, SecretName: "tls"}}
		}, want: []string{"Invalid value: spec.tls[0].hosts[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ing := ingressWith(prefixPath("/", "web", 80))
			tt.mutate(ing)
			wantErrs(t, create(r, ing), tt.want...)
		})
	}
}

func TestIngressClassAnnotationCheckedOnCreateOnly(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "networking.k8s.io", "ingresses")
	old := ingressWith(prefixPath("/", "web", 80))
	old.Spec.IngressClassName = ptrTo("nginx")
	wantErrs(t, create(r, old))
	both := old.DeepCopy()
	both.Annotations = map[string]string{annotationIngressClass: "traefik"}
	wantErrs(t, update(r, both, old))
	agree := old.DeepCopy()
	agree.Annotations = map[string]string{annotationIngressClass: "nginx"}
	wantErrs(t, create(r, agree))
}

func TestIngressStatusAndTable(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "networking.k8s.io", "ingresses")
	ing := ingressWith(prefixPath("/", "web", 80))
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "1.2.3.4"}}
	wantErrs(t, create(r, ing))
	if len(ing.Status.LoadBalancer.Ingress) != 0 || ing.Generation != 1 {
		t.Fatalf("create kept status or no generation: %+v", ing)
	}
	// A spec update keeps the status and bumps generation.
	withStatus := ing.DeepCopy()
	withStatus.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.9"}}
	upd := ing.DeepCopy()
	upd.Spec.Rules[0].Host = "other.example.com"
	upd.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "9.9.9.9"}}
	wantErrs(t, update(r, upd, withStatus))
	if upd.Status.LoadBalancer.Ingress[0].IP != "10.0.0.9" || upd.Generation != 2 {
		t.Errorf("update: status %v generation %d", upd.Status, upd.Generation)
	}
	// A status update keeps the spec and checks addresses.
	st := upd.DeepCopy()
	st.Spec.Rules = nil
	st.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "300.1.1.1"}, {Hostname: "10.1.1.1"}}
	wantErrs(t, updateStatus(r, st, upd), "Invalid value: status.loadBalancer.ingress[0].ip", "Invalid value: status.loadBalancer.ingress[1].hostname")
	if len(st.Spec.Rules) != 1 {
		t.Errorf("status update changed the spec")
	}

	tests := []struct {
		name string
		ing  *networkingv1.Ingress
		want map[string]interface{}
	}{
		{name: "plain", ing: ingressWith(prefixPath("/", "web", 80)),
			want: map[string]interface{}{"Class": "<none>", "Hosts": "example.com", "Address": "", "Ports": "80"}},
		{name: "class, tls, address", ing: func() *networkingv1.Ingress {
			i := ingressWith(prefixPath("/", "web", 80))
			i.Spec.IngressClassName = ptrTo("nginx")
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"example.com"}}}
			i.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.2"}, {IP: "10.0.0.1"}, {Hostname: "lb.example.com"}}
			return i
		}(), want: map[string]interface{}{"Class": "nginx", "Hosts": "example.com", "Address": "10.0.0.1,10.0...", "Ports": "80, 443"}},
		{name: "many hosts and a catch-all", ing: func() *networkingv1.Ingress {
			i := ingressWith()
			i.Spec.Rules = nil
			for _, h := range []string{"", "a.io", "b.io", "c.io", "d.io", "e.io"} {
				i.Spec.Rules = append(i.Spec.Rules, networkingv1.IngressRule{Host: h})
			}
			return i
		}(), want: map[string]interface{}{"Hosts": "a.io,b.io,c.io + 3 more..."}},
		{name: "catch-all only", ing: &networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{}}}},
			want: map[string]interface{}{"Hosts": "*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := cells(r, tt.ing)
			for k, v := range tt.want {
				if row[k] != v {
					t.Errorf("%s = %q, want %q", k, row[k], v)
				}
			}
		})
	}
	if got := columnNames(r); len(got) != 6 || got[1] != "Class" || got[5] != "Age" {
		t.Errorf("columns %v", got)
	}
}

func TestIngressClass(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "networking.k8s.io", "ingressclasses")
	ic := &networkingv1.IngressClass{ObjectMeta: meta("nginx", ""), Spec: networkingv1.IngressClassSpec{
		Controller: "k8s.io/ingress-nginx",
		Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptrTo("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb"},
	}}
	wantErrs(t, create(r, ic))
	if ic.Spec.Parameters.Scope == nil || *ic.Spec.Parameters.Scope != networkingv1.IngressClassParametersReferenceScopeCluster {
		t.Errorf("scope not defaulted to Cluster: %v", ic.Spec.Parameters.Scope)
	}
	if row := cells(r, ic); row["Controller"] != "k8s.io/ingress-nginx" || row["Parameters"] != "IngressParameters.k8s.example.com/external-lb" {
		t.Errorf("row %v", row)
	}
	if row := cells(r, &networkingv1.IngressClass{}); row["Parameters"] != "<none>" {
		t.Errorf("row %v", row)
	}
	tests := []struct {
		name   string
		mutate func(*networkingv1.IngressClass)
		want   []string
	}{
		{name: "no controller", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" }, want: []string{"Required value: spec.controller"}},
		{name: "controller not domain-prefixed", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "nginx" }, want: []string{"Invalid value: spec.controller"}},
		{name: "namespace scope without namespace", mutate: func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters.Scope = ptrTo(networkingv1.IngressClassParametersReferenceScopeNamespace)
		}, want: []string{"Required value: spec.parameters.namespace"}},
		{name: "cluster scope with namespace", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Namespace = ptrTo("default") },
			want: []string{"Forbidden: spec.parameters.namespace"}},
		{name: "unknown scope", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Scope = ptrTo("Galaxy") },
			want: []string{"Unsupported value: spec.parameters.scope"}},
		{name: "parameters without kind and name", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters.Kind, ic.Spec.Parameters.Name = "", "" },
			want: []string{"Required value: spec.parameters.kind", "Required value: spec.parameters.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := ic.DeepCopy()
			tt.mutate(bad)
			wantErrs(t, r.Strategy.Validate(t.Context(), bad), tt.want...)
		})
	}
	moved := ic.DeepCopy()
	moved.Spec.Controller = "example.com/other"
	wantErrs(t, update(r, moved, ic), "Invalid value: spec.controller")
}

func TestNetworkPolicy(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "networking.k8s.io", "networkpolicies")
	port := intstr.FromInt32(80)
	np := &networkingv1.NetworkPolicy{ObjectMeta: meta("allow", "default"), Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}},
		}},
	}}
	wantErrs(t, create(r, np))
	if got := np.Spec.PolicyTypes; len(got) != 1 || got[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes %v", got)
	}
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("protocol not defaulted to TCP")
	}
	if row := cells(r, np); row["Pod-Selector"] != "app=web" {
		t.Errorf("row %v", row)
	}
	if row := cells(r, &networkingv1.NetworkPolicy{}); row["Pod-Selector"] != "<none>" {
		t.Errorf("empty selector row %v", row)
	}

	egress := &networkingv1.NetworkPolicy{ObjectMeta: meta("egress", "default"), Spec: networkingv1.NetworkPolicySpec{
		Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}}}},
	}}
	wantErrs(t, create(r, egress))
	if got := egress.Spec.PolicyTypes; len(got) != 2 || got[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes %v", got)
	}

	named, bigEnd := intstr.FromString("http"), int32(70000)
	tests := []struct {
		name string
		spec networkingv1.NetworkPolicySpec
		want []string
	}{
		{name: "empty peer", spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{}}}}},
			want: []string{"Required value: spec.ingress[0].from[0]"}},
		{name: "ipBlock with a selector", spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{
			IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}, PodSelector: &metav1.LabelSelector{}}}}}},
			want: []string{"Forbidden: spec.egress[0].to[0]"}},
		{name: "except outside cidr", spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{
			IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.0.0/8", "bogus"}}}}}}},
			want: []string{"Invalid value: spec.egress[0].to[0].ipBlock.except[0]", "Invalid value: spec.egress[0].to[0].ipBlock.except[1]"}},
		{name: "ipBlock without cidr", spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{
			IPBlock: &networkingv1.IPBlock{}}}}}},
			want: []string{"Required value: spec.egress[0].to[0].ipBlock.cidr"}},
		{name: "bad ports", spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{
			{Protocol: ptrTo(corev1.Protocol("ICMP")), Port: &port, EndPort: &bigEnd},
			{Port: &named, EndPort: ptrTo(int32(90))},
			{EndPort: ptrTo(int32(90))},
		}}}}, want: []string{"Unsupported value: spec.ingress[0].ports[0].protocol", "Invalid value: spec.ingress[0].ports[0].endPort",
			"Invalid value: spec.ingress[0].ports[1].endPort", "Invalid value: spec.ingress[0].ports[2].endPort"}},
		{name: "unknown policy type", spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Sideways"}},
			want: []string{"Unsupported value: spec.policyTypes[0]"}},
		{name: "too many policy types", spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}},
			want: []string{"Invalid value: spec.policyTypes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErrs(t, create(r, &networkingv1.NetworkPolicy{ObjectMeta: meta("x", "default"), Spec: tt.spec}), tt.want...)
		})
	}
}

func TestRuntimeClass(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "node.k8s.io", "runtimeclasses")
	rc := &nodev1.RuntimeClass{ObjectMeta: meta("gvisor", ""), Handler: "runsc",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "gvisor"}}}
	wantErrs(t, create(r, rc))
	if row := cells(r, rc); row["Handler"] != "runsc" || row["Name"] != "gvisor" {
		t.Errorf("row %v", row)
	}
	tests := []struct {
		name   string
		mutate func(*nodev1.RuntimeClass)
		want   []string
	}{
		{name: "handler not a DNS label", mutate: func(rc *nodev1.RuntimeClass) { rc.Handler = "run.sc" }, want: []string{"Invalid value: handler"}},
		{name: "no handler", mutate: func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, want: []string{"Invalid value: handler"}},
		{name: "negative overhead", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Overhead.PodFixed[corev1.ResourceMemory] = resource.MustParse("-1Mi")
		}, want: []string{"Invalid value: overhead.podFixed[memory]"}},
		{name: "bad node selector", mutate: func(rc *nodev1.RuntimeClass) { rc.Scheduling.NodeSelector = map[string]string{"bad key!": "x"} },
			want: []string{"Invalid value: scheduling.nodeSelector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := rc.DeepCopy()
			tt.mutate(bad)
			wantErrs(t, create(r, bad), tt.want...)
		})
	}
	moved := rc.DeepCopy()
	moved.Handler = "kata"
	wantErrs(t, update(r, moved, rc), "Invalid value: handler")
}
