package registry

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func serviceResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.Service]{behavior[*corev1.Service]{
		namespaced:     true,
		name:           apivalidation.NameIsDNS1035Label,
		resetStatus:    func(s *corev1.Service) { s.Status = corev1.ServiceStatus{} },
		keepStatus:     func(obj, old *corev1.Service) { obj.Status = old.Status },
		keepSpec:       func(obj, old *corev1.Service) { obj.Spec = old.Spec },
		defaults:       defaultService,
		prepareUpdate:  keepAllocatedServiceValues,
		validate:       validateService,
		validateUpdate: validateServiceUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Service",
		Resource:         "services",
		SingularName:     "service",
		Namespaced:       true,
		ShortNames:       []string{"svc"},
		Categories:       []string{"all"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status", "proxy"},
		New:              func() runtime.Object { return &corev1.Service{} },
		NewList:          func() runtime.Object { return &corev1.ServiceList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(o runtime.Object) fields.Set { return serviceFields(o.(*corev1.Service)) },
		Table:            serviceTable(c),
		StorageKeyPrefix: storagePrefix(gv, "services"),
	}
}

// defaultService is SetDefaults_Service, plus the IP-family fields
// upstream's REST layer fills: a service that gets (or has) a cluster IP is
// SingleStack in the family of that IP, IPv4 until the server allocates one.
// The server sets clusterIP/clusterIPs itself.
func defaultService(s *corev1.Service) {
	sp := &s.Spec
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch sp.SessionAffinity {
	case corev1.ServiceAffinityNone:
		sp.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if sp.SessionAffinityConfig == nil || sp.SessionAffinityConfig.ClientIP == nil || sp.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			sp.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(corev1.DefaultClientIPServiceAffinitySeconds)}}
		}
	}
	if sp.Type == "" {
		sp.Type = corev1.ServiceTypeClusterIP
	}
	for i := range sp.Ports {
		p := &sp.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if intOrStringZero(p.TargetPort) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	external := sp.Type == corev1.ServiceTypeNodePort || sp.Type == corev1.ServiceTypeLoadBalancer
	if external && sp.ExternalTrafficPolicy == "" {
		sp.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if sp.InternalTrafficPolicy == nil && (external || sp.Type == corev1.ServiceTypeClusterIP) {
		sp.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if sp.Type == corev1.ServiceTypeLoadBalancer && sp.AllocateLoadBalancerNodePorts == nil {
		sp.AllocateLoadBalancerNodePorts = ptrTo(true)
	}
	if sp.ClusterIP != "" && len(sp.ClusterIPs) == 0 {
		sp.ClusterIPs = []string{sp.ClusterIP}
	}
	if sp.Type != corev1.ServiceTypeExternalName {
		if sp.IPFamilyPolicy == nil {
			sp.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		}
		if len(sp.IPFamilies) == 0 {
			family := corev1.IPv4Protocol
			if ip := net.ParseIP(sp.ClusterIP); ip != nil && ip.To4() == nil {
				family = corev1.IPv6Protocol
			}
			sp.IPFamilies = []corev1.IPFamily{family}
		}
	}
}

// keepAllocatedServiceValues is upstream's patchAllocatedValues: an update
// that leaves out what the server allocated (clusterIP, node ports), as
// `kubectl apply` of the original manifest does, keeps the allocation.
func keepAllocatedServiceValues(obj, old *corev1.Service) {
	if obj.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if obj.Spec.ClusterIP == "" && old.Spec.ClusterIP != "" {
		obj.Spec.ClusterIP = old.Spec.ClusterIP
		obj.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
		// The families were defaulted from an empty IP; they belong to
		// the allocation.
		obj.Spec.IPFamilies = append([]corev1.IPFamily(nil), old.Spec.IPFamilies...)
		obj.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
	}
	if len(obj.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 && obj.Spec.ClusterIP == old.Spec.ClusterIP {
		obj.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
	}
	if obj.Spec.Type == corev1.ServiceTypeNodePort || obj.Spec.Type == corev1.ServiceTypeLoadBalancer {
		oldPorts := map[string]int32{}
		for _, p := range old.Spec.Ports {
			oldPorts[fmt.Sprintf("%s/%d", p.Protocol, p.Port)] = p.NodePort
		}
		for i := range obj.Spec.Ports {
			p := &obj.Spec.Ports[i]
			if p.NodePort == 0 {
				p.NodePort = oldPorts[fmt.Sprintf("%s/%d", p.Protocol, p.Port)]
			}
		}
	}
	// Upstream's rules for the health check node port: kept when both
	// need one and the update leaves it out, wiped (and so released) when
	// the update stops needing it and did not change it.
	switch {
	case needsHealthCheck(old) && needsHealthCheck(obj) && obj.Spec.HealthCheckNodePort == 0:
		obj.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	case needsHealthCheck(old) && !needsHealthCheck(obj) && obj.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort:
		obj.Spec.HealthCheckNodePort = 0
	}
}

// needsHealthCheck: a LoadBalancer with externalTrafficPolicy Local has
// a health check node port (allocated with the node ports).
func needsHealthCheck(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func validateService(s *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	spec := &s.Spec
	errs = append(errs, validateOneOf(spec.Type, sp.Child("type"), corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)...)
	headless := spec.ClusterIP == corev1.ClusterIPNone
	if spec.Type == corev1.ServiceTypeExternalName {
		if spec.ExternalName == "" {
			errs = append(errs, field.Required(sp.Child("externalName"), ""))
		} else {
			errs = append(errs, validateDNS1123Subdomain(strings.TrimSuffix(spec.ExternalName, "."), sp.Child("externalName"))...)
		}
	} else if len(spec.Ports) == 0 && !headless {
		errs = append(errs, field.Required(sp.Child("ports"), ""))
	}
	if spec.ClusterIP != "" && !headless && net.ParseIP(spec.ClusterIP) == nil {
		errs = append(errs, field.Invalid(sp.Child("clusterIPs").Index(0), spec.ClusterIP, "must be empty, 'None', or a valid IP address"))
	}
	if headless && spec.Type != corev1.ServiceTypeClusterIP && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Invalid(sp.Child("clusterIPs").Index(0), spec.ClusterIP, "may not be set to 'None' for LoadBalancer or NodePort services"))
	}

	pp := sp.Child("ports")
	names := sets.New[string]()
	type key struct {
		proto corev1.Protocol
		port  int32
	}
	seen := map[key]bool{}
	for i, port := range spec.Ports {
		ip := pp.Index(i)
		switch {
		case port.Name == "" && len(spec.Ports) > 1:
			errs = append(errs, field.Required(ip.Child("name"), ""))
		case port.Name != "":
			errs = append(errs, validateDNS1123Label(port.Name, ip.Child("name"))...)
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(port.Port)) {
			errs = append(errs, field.Invalid(ip.Child("port"), port.Port, msg))
		}
		errs = append(errs, validateProtocol(port.Protocol, ip.Child("protocol"))...)
		errs = append(errs, validatePortNumOrName(port.TargetPort, ip.Child("targetPort"))...)
		if port.NodePort != 0 {
			if spec.Type == corev1.ServiceTypeClusterIP || spec.Type == corev1.ServiceTypeExternalName {
				errs = append(errs, field.Forbidden(ip.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
			for _, msg := range validation.IsValidPortNum(int(port.NodePort)) {
				errs = append(errs, field.Invalid(ip.Child("nodePort"), port.NodePort, msg))
			}
		}
		k := key{port.Protocol, port.Port}
		if seen[k] {
			errs = append(errs, field.Duplicate(ip, corev1.ServicePort{Protocol: port.Protocol, Port: port.Port}))
		}
		seen[k] = true
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.Selector, sp.Child("selector"))...)
	errs = append(errs, validateOneOf(spec.SessionAffinity, sp.Child("sessionAffinity"), corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)...)
	if spec.ExternalTrafficPolicy != "" {
		if spec.Type != corev1.ServiceTypeNodePort && spec.Type != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Invalid(sp.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		} else {
			errs = append(errs, validateOneOf(spec.ExternalTrafficPolicy, sp.Child("externalTrafficPolicy"), corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)...)
		}
	}
	if !needsHealthCheck(s) {
		if spec.HealthCheckNodePort != 0 {
			errs = append(errs, field.Invalid(sp.Child("healthCheckNodePort"), spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if spec.HealthCheckNodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(sp.Child("healthCheckNodePort"), spec.HealthCheckNodePort, msg))
		}
	}
	for i, ip := range spec.ExternalIPs {
		if net.ParseIP(ip) == nil {
			errs = append(errs, field.Invalid(sp.Child("externalIPs").Index(i), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	return errs
}

// validatePortNumOrName checks a target port: a number in range or an
// IANA service name.
func validatePortNumOrName(v intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(v.IntValue()) {
			errs = append(errs, field.Invalid(p, v.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(v.StrVal) {
		errs = append(errs, field.Invalid(p, v.StrVal, msg))
	}
	return errs
}

// validateServiceUpdate: the primary cluster IP cannot change once
// allocated, except when the type moves to or from ExternalName; the
// health check node port cannot change while it is needed.
func validateServiceUpdate(obj, old *corev1.Service) field.ErrorList {
	if needsHealthCheck(old) && needsHealthCheck(obj) && obj.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), "field is immutable")}
	}
	if obj.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if old.Spec.ClusterIP != "" && obj.Spec.ClusterIP != old.Spec.ClusterIP {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), obj.Spec.ClusterIP, "may not change once set")}
	}
	return nil
}

func serviceFields(s *corev1.Service) fields.Set {
	return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
}

// serviceTable is upstream's printService.
func serviceTable(c clock) TableConvertor {
	return table[*corev1.Service]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
			col("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
			col("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
			col("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
			ageColumn(),
			wide(col("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"])),
		},
		cells: func(s *corev1.Service) []interface{} {
			clusterIP := "<none>"
			if len(s.Spec.ClusterIPs) > 0 {
				clusterIP = s.Spec.ClusterIPs[0]
			}
			return []interface{}{s.Name, string(s.Spec.Type), clusterIP, serviceExternalIP(s), orNone(servicePorts(s.Spec.Ports)),
				c.since(s.CreationTimestamp), labels.FormatLabels(s.Spec.Selector)}
		},
	}
}

func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		lb := strings.Join(ips, ",")
		// Non-wide output truncates long ingress lists as kubectl does.
		if len(lb) > 16 {
			lb = lb[:13] + "..."
		}
		if len(s.Spec.ExternalIPs) > 0 {
			var all []string
			if lb != "" {
				all = strings.Split(lb, ",")
			}
			return strings.Join(append(all, s.Spec.ExternalIPs...), ",")
		}
		if lb != "" {
			return lb
		}
		return "<pending>"
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

func servicePorts(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, p := range ports {
		pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}
