package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// annotationIngressClass is the class annotation that predates
// spec.ingressClassName; upstream still honours it.
const annotationIngressClass = "kubernetes.io/ingress.class"

// Upstream's path rules for Exact and Prefix paths.
var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

func ingressResource(c clock) *Resource {
	gv := v1(networkingGroup)
	s := strategy[*networkingv1.Ingress]{behavior[*networkingv1.Ingress]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *networkingv1.Ingress) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(i *networkingv1.Ingress) { i.Status = networkingv1.IngressStatus{} },
		keepStatus:  func(obj, old *networkingv1.Ingress) { obj.Status = old.Status },
		keepSpec: func(obj, old *networkingv1.Ingress) {
			obj.Spec = old.Spec
		},
		validate: validateIngress,
		validateStatus: func(obj, _ *networkingv1.Ingress) field.ErrorList {
			return validateIngressLoadBalancerStatus(&obj.Status.LoadBalancer, field.NewPath("status", "loadBalancer"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Ingress",
		Resource:         "ingresses",
		SingularName:     "ingress",
		Namespaced:       true,
		ShortNames:       []string{"ing"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &networkingv1.Ingress{} },
		NewList:          func() runtime.Object { return &networkingv1.IngressList{} },
		Strategy:         ingressStrategy{s},
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            ingressTable(c),
		StorageKeyPrefix: storagePrefix(gv, "ingresses"),
	}
}

// ingressStrategy adds upstream's create-only rule to the generic
// strategy: an Ingress may name its class in both the annotation and
// spec.ingressClassName only if they agree. Updates are not checked, so an
// Ingress stored before the rule (or given the annotation later) stays
// writable, as upstream.
type ingressStrategy struct {
	strategy[*networkingv1.Ingress]
}

func (s ingressStrategy) Validate(ctx context.Context, o runtime.Object) field.ErrorList {
	errs := s.strategy.Validate(ctx, o)
	ing := o.(*networkingv1.Ingress)
	if v, ok := ing.Annotations[annotationIngressClass]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(annotationIngressClass), v, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// validateIngress is upstream's ValidateIngressSpec.
func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	spec := &ing.Spec
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(sp, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, sp.Child("defaultBackend"))...)
	}
	for i, rule := range spec.Rules {
		rp := sp.Child("rules").Index(i)
		if rule.Host != "" {
			errs = append(errs, validateIngressHost(rule.Host, rp.Child("host"))...)
		}
		if rule.HTTP != nil {
			errs = append(errs, validateHTTPIngressRule(rule.HTTP, rp.Child("http"))...)
		}
	}
	for i, tls := range spec.TLS {
		tp := sp.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, validateWildcardHost(host, tp.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(sp.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

func validateIngressHost(host string, p *field.Path) field.ErrorList {
	if netutils.ParseIPSloppy(host) != nil {
		return field.ErrorList{field.Invalid(p, host, "must be a DNS name, not an IP address")}
	}
	return validateWildcardHost(host, p)
}

func validateWildcardHost(host string, p *field.Path) field.ErrorList {
	msgs := validation.IsDNS1123Subdomain(host)
	if strings.Contains(host, "*") {
		msgs = validation.IsWildcardDNS1123Subdomain(host)
	}
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(p, host, msg))
	}
	return errs
}

func validateHTTPIngressRule(http *networkingv1.HTTPIngressRuleValue, p *field.Path) field.ErrorList {
	if len(http.Paths) == 0 {
		return field.ErrorList{field.Required(p.Child("paths"), "")}
	}
	var errs field.ErrorList
	for i := range http.Paths {
		errs = append(errs, validateHTTPIngressPath(&http.Paths[i], p.Child("paths").Index(i))...)
	}
	return errs
}

// validateHTTPIngressPath: networking/v1 has no default pathType, so a
// path without one is refused rather than guessed.
func validateHTTPIngressPath(path *networkingv1.HTTPIngressPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.PathType == nil {
		return append(errs, field.Required(p.Child("pathType"), "pathType must be specified"))
	}
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must be an absolute path"))
		}
		if path.Path != "" {
			for _, seq := range invalidPathSequences {
				if strings.Contains(path.Path, seq) {
					errs = append(errs, field.Invalid(p.Child("path"), path.Path, fmt.Sprintf("must not contain '%s'", seq)))
				}
			}
			for _, suf := range invalidPathSuffixes {
				if strings.HasSuffix(path.Path, suf) {
					errs = append(errs, field.Invalid(p.Child("path"), path.Path, fmt.Sprintf("cannot end with '%s'", suf)))
				}
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType,
			[]string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}))
	}
	return append(errs, validateIngressBackend(&path.Backend, p.Child("backend"))...)
}

// validateIngressBackend: exactly one of a service (with a port name or
// number) and a typed resource.
func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		return append(errs, field.Invalid(p, "", "cannot set both resource and service backends"))
	case b.Resource != nil:
		errs = append(errs, validateTypedLocalObjectReference(b.Resource.APIGroup, b.Resource.Kind, b.Resource.Name, p.Child("resource"))...)
	case b.Service != nil:
		svc := b.Service
		if svc.Name == "" {
			errs = append(errs, field.Required(p.Child("service", "name"), ""))
		} else {
			for _, msg := range apivalidation.NameIsDNS1035Label(svc.Name, false) {
				errs = append(errs, field.Invalid(p.Child("service", "name"), svc.Name, msg))
			}
		}
		hasName, hasNumber := svc.Port.Name != "", svc.Port.Number != 0
		switch {
		case hasName && hasNumber:
			errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
		case hasName:
			for _, msg := range validation.IsValidPortName(svc.Port.Name) {
				errs = append(errs, field.Invalid(p.Child("service", "port", "name"), svc.Port.Name, msg))
			}
		case hasNumber:
			for _, msg := range validation.IsValidPortNum(int(svc.Port.Number)) {
				errs = append(errs, field.Invalid(p.Child("service", "port", "number"), svc.Port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(p, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(p, "", "resource or service backend is required"))
	}
	return errs
}

// validateTypedLocalObjectReference is upstream's
// validateIngressTypedLocalObjectReference, also used for IngressClass
// parameters.
func validateTypedLocalObjectReference(apiGroup *string, kind, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if apiGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*apiGroup) {
			errs = append(errs, field.Invalid(p.Child("apiGroup"), *apiGroup, msg))
		}
	}
	if kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), "kind is required"))
	} else {
		for _, msg := range validatePathSegmentName(kind) {
			errs = append(errs, field.Invalid(p.Child("kind"), kind, msg))
		}
	}
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name is required"))
	} else {
		for _, msg := range validatePathSegmentName(name) {
			errs = append(errs, field.Invalid(p.Child("name"), name, msg))
		}
	}
	return errs
}

// validatePathSegmentName is apimachinery's path.IsValidPathSegmentName.
func validatePathSegmentName(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var msgs []string
	for _, illegal := range []string{"/", "%"} {
		if strings.Contains(name, illegal) {
			msgs = append(msgs, fmt.Sprintf(`may not contain '%s'`, illegal))
		}
	}
	return msgs
}

func validateIngressLoadBalancerStatus(s *networkingv1.IngressLoadBalancerStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, in := range s.Ingress {
		ip := p.Child("ingress").Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIP(ip.Child("ip"), in.IP)...)
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, msg))
			}
			if netutils.ParseIPSloppy(in.Hostname) != nil {
				errs = append(errs, field.Invalid(ip.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// ingressTable is upstream's printIngress.
func ingressTable(c clock) TableConvertor {
	return table[*networkingv1.Ingress]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Class", "string", "The name of the IngressClass resource that should be used for ingress"),
			col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
			col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
			col("Ports", "string", "Ports of TLS configurations that open"),
			ageColumn(),
		},
		cells: func(ing *networkingv1.Ingress) []interface{} {
			class := "<none>"
			if ing.Spec.IngressClassName != nil {
				class = *ing.Spec.IngressClassName
			}
			ports := "80"
			if len(ing.Spec.TLS) != 0 {
				ports = "80, 443"
			}
			return []interface{}{ing.Name, class, ingressHosts(ing.Spec.Rules), ingressAddress(ing.Status.LoadBalancer), ports, c.since(ing.CreationTimestamp)}
		},
	}
}

// ingressHosts is upstream's formatHosts: at most three hosts, "*" for
// rules without one.
func ingressHosts(rules []networkingv1.IngressRule) string {
	const max = 3
	var list []string
	more := false
	for _, r := range rules {
		if len(list) == max {
			more = true
		}
		if !more && r.Host != "" {
			list = append(list, r.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	out := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", out, len(rules)-max)
	}
	return out
}

// ingressAddress is upstream's ingressLoadBalancerStatusStringer, not
// wide: sorted, distinct, cut at 16 characters.
func ingressAddress(s networkingv1.IngressLoadBalancerStatus) string {
	const width = 16
	seen := map[string]bool{}
	var addrs []string
	for _, in := range s.Ingress {
		a := in.IP
		if a == "" {
			a = in.Hostname
		}
		if a != "" && !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	sort.Strings(addrs)
	r := strings.Join(addrs, ",")
	if len(r) > width {
		r = r[:width-3] + "..."
	}
	return r
}
