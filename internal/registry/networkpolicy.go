package registry

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

func networkPolicyResource(c clock) *Resource {
	gv := v1(networkingGroup)
	s := strategy[*networkingv1.NetworkPolicy]{behavior[*networkingv1.NetworkPolicy]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *networkingv1.NetworkPolicy) bool { return semanticChanged(obj.Spec, old.Spec) },
		defaults:    defaultNetworkPolicy,
		validate: func(np *networkingv1.NetworkPolicy) field.ErrorList {
			return validateNetworkPolicySpec(&np.Spec, field.NewPath("spec"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "NetworkPolicy",
		Resource:         "networkpolicies",
		SingularName:     "networkpolicy",
		Namespaced:       true,
		ShortNames:       []string{"netpol"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &networkingv1.NetworkPolicy{} },
		NewList:          func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*networkingv1.NetworkPolicy]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
				ageColumn(),
			},
			cells: func(np *networkingv1.NetworkPolicy) []interface{} {
				return []interface{}{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), c.since(np.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "networkpolicies"),
	}
}

// defaultNetworkPolicy is SetDefaults_NetworkPolicy and
// SetDefaults_NetworkPolicyPort: ports default to TCP, and a policy that
// names no policyTypes is an Ingress policy, and an Egress one too when it
// has egress rules.
func defaultNetworkPolicy(np *networkingv1.NetworkPolicy) {
	defaultPorts := func(ports []networkingv1.NetworkPolicyPort) {
		for i := range ports {
			if ports[i].Protocol == nil {
				ports[i].Protocol = ptrTo(corev1.ProtocolTCP)
			}
		}
	}
	for i := range np.Spec.Ingress {
		defaultPorts(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		defaultPorts(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) != 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func validateNetworkPolicySpec(s *networkingv1.NetworkPolicySpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabelSelector(&s.PodSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("podSelector"))...)
	for i, in := range s.Ingress {
		ip := p.Child("ingress").Index(i)
		for j := range in.Ports {
			errs = append(errs, validateNetworkPolicyPort(&in.Ports[j], ip.Child("ports").Index(j))...)
		}
		for j := range in.From {
			errs = append(errs, validateNetworkPolicyPeer(&in.From[j], ip.Child("from").Index(j))...)
		}
	}
	for i, eg := range s.Egress {
		ep := p.Child("egress").Index(i)
		for j := range eg.Ports {
			errs = append(errs, validateNetworkPolicyPort(&eg.Ports[j], ep.Child("ports").Index(j))...)
		}
		for j := range eg.To {
			errs = append(errs, validateNetworkPolicyPeer(&eg.To[j], ep.Child("to").Index(j))...)
		}
	}
	if len(s.PolicyTypes) > 2 {
		return append(errs, field.Invalid(p.Child("policyTypes"), &s.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range s.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(p.Child("policyTypes").Index(i), t, []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}))
		}
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := port.Protocol; pr != nil && *pr != corev1.ProtocolTCP && *pr != corev1.ProtocolUDP && *pr != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(p.Child("protocol"), *pr, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(p.Child("endPort"), port.Port.IntVal, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.StrVal, msg))
		}
	}
	return errs
}

// validateNetworkPolicyPeer: a peer names at least one selector, and an
// ipBlock stands alone.
func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	opts := metav1validation.LabelSelectorValidationOptions{}
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, p.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, p.Child("ipBlock"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
	}
	return errs
}

func validateIPBlock(b *networkingv1.IPBlock, p *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(p.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDR(p.Child("cidr"), b.CIDR)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	for i, ex := range b.Except {
		ep := p.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDR(ep, ex)...)
		_, exNet, err := netutils.ParseCIDRSloppy(ex)
		if err != nil {
			continue
		}
		cidrLen, _ := cidr.Mask.Size()
		exLen, _ := exNet.Mask.Size()
		if !cidr.Contains(exNet.IP) || cidrLen >= exLen {
			errs = append(errs, field.Invalid(ep, ex, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}
