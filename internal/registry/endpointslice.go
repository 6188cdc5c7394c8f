package registry

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's size limits keep a slice small enough to fan out cheaply.
const (
	maxEndpoints  = 1000
	maxAddresses  = 100
	maxSlicePorts = 20000
)

func endpointSliceResource(c clock) *Resource {
	gv := v1(discoveryGroup)
	s := strategy[*discoveryv1.EndpointSlice]{behavior[*discoveryv1.EndpointSlice]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		defaults: func(es *discoveryv1.EndpointSlice) {
			for i := range es.Ports {
				p := &es.Ports[i]
				if p.Name == nil {
					p.Name = ptrTo("")
				}
				if p.Protocol == nil {
					p.Protocol = ptrTo(corev1.ProtocolTCP)
				}
			}
		},
		validate: validateEndpointSlice,
		validateUpdate: func(obj, old *discoveryv1.EndpointSlice) field.ErrorList {
			return immutable(obj.AddressType, old.AddressType, field.NewPath("addressType"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "EndpointSlice",
		Resource:         "endpointslices",
		SingularName:     "endpointslice",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:          func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*discoveryv1.EndpointSlice]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
				col("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
				col("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
				ageColumn(),
			},
			cells: func(es *discoveryv1.EndpointSlice) []interface{} {
				return []interface{}{es.Name, string(es.AddressType), slicePorts(es.Ports), sliceEndpoints(es.Endpoints), c.since(es.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "endpointslices"),
	}
}

func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateOneOf(es.AddressType, field.NewPath("addressType"), discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)...)
	ep := field.NewPath("endpoints")
	if len(es.Endpoints) > maxEndpoints {
		errs = append(errs, field.TooMany(ep, len(es.Endpoints), maxEndpoints))
	}
	for i, e := range es.Endpoints {
		ap := ep.Index(i).Child("addresses")
		switch {
		case len(e.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(e.Addresses) > maxAddresses:
			errs = append(errs, field.TooMany(ap, len(e.Addresses), maxAddresses))
		}
		for j, a := range e.Addresses {
			errs = append(errs, validateSliceAddress(es.AddressType, a, ap.Index(j))...)
		}
		if e.Hostname != nil {
			errs = append(errs, validateDNS1123Label(*e.Hostname, ep.Index(i).Child("hostname"))...)
		}
	}
	pp := field.NewPath("ports")
	if len(es.Ports) > maxSlicePorts {
		errs = append(errs, field.TooMany(pp, len(es.Ports), maxSlicePorts))
	}
	names := sets.New[string]()
	for i, p := range es.Ports {
		ip := pp.Index(i)
		if p.Name != nil && *p.Name != "" {
			errs = append(errs, validateDNS1123Label(*p.Name, ip.Child("name"))...)
		}
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), name))
		}
		names.Insert(name)
		if p.Protocol == nil {
			errs = append(errs, field.Required(ip.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*p.Protocol, ip.Child("protocol"))...)
		}
		if p.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*p.Port)) {
				errs = append(errs, field.Invalid(ip.Child("port"), *p.Port, msg))
			}
		}
	}
	return errs
}

func validateSliceAddress(t discoveryv1.AddressType, a string, p *field.Path) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		if ip := net.ParseIP(a); ip == nil || ip.To4() == nil || strings.Contains(a, ":") {
			return field.ErrorList{field.Invalid(p, a, "must be a valid IPv4 address")}
		}
	case discoveryv1.AddressTypeIPv6:
		if ip := net.ParseIP(a); ip == nil || !strings.Contains(a, ":") {
			return field.ErrorList{field.Invalid(p, a, "must be a valid IPv6 address")}
		}
	case discoveryv1.AddressTypeFQDN:
		return validateDNS1123Subdomain(a, p)
	}
	return nil
}

// slicePorts and sliceEndpoints are kubectl's formatDiscoveryPorts and
// formatDiscoveryEndpoints.
func slicePorts(ports []discoveryv1.EndpointPort) string {
	if len(ports) == 0 {
		return "<unset>"
	}
	const max = 3
	var list []string
	for _, p := range ports {
		if len(list) == max {
			return fmt.Sprintf("%s + %d more...", strings.Join(list, ","), len(ports)-max)
		}
		if p.Port == nil {
			list = append(list, "<unset>")
		} else {
			list = append(list, strconv.Itoa(int(*p.Port)))
		}
	}
	return strings.Join(list, ",")
}

func sliceEndpoints(eps []discoveryv1.Endpoint) string {
	if len(eps) == 0 {
		return "<unset>"
	}
	const max = 3
	var list []string
	count := 0
	for _, e := range eps {
		count += len(e.Addresses)
		for _, a := range e.Addresses {
			if len(list) < max {
				list = append(list, a)
			}
		}
	}
	if count > max {
		return fmt.Sprintf("%s + %d more...", strings.Join(list, ","), count-max)
	}
	return strings.Join(list, ",")
}
