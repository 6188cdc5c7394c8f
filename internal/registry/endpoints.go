package registry

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func endpointsResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.Endpoints]{behavior[*corev1.Endpoints]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		defaults: func(ep *corev1.Endpoints) {
			for i := range ep.Subsets {
				for j := range ep.Subsets[i].Ports {
					if p := &ep.Subsets[i].Ports[j]; p.Protocol == "" {
						p.Protocol = corev1.ProtocolTCP
					}
				}
			}
		},
		validate: validateEndpoints,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Endpoints",
		Resource:         "endpoints",
		SingularName:     "endpoints",
		Namespaced:       true,
		ShortNames:       []string{"ep"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &corev1.Endpoints{} },
		NewList:          func() runtime.Object { return &corev1.EndpointsList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*corev1.Endpoints]{
			columns: []metav1.TableColumnDefinition{nameColumn(), col("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]), ageColumn()},
			cells: func(ep *corev1.Endpoints) []interface{} {
				return []interface{}{ep.Name, formatEndpoints(ep), c.since(ep.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "endpoints"),
	}
}

func validateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	var errs field.ErrorList
	for i, ss := range ep.Subsets {
		sp := field.NewPath("subsets").Index(i)
		for j, a := range ss.Addresses {
			errs = append(errs, validateEndpointIP(a.IP, sp.Child("addresses").Index(j).Child("ip"))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointIP(a.IP, sp.Child("notReadyAddresses").Index(j).Child("ip"))...)
		}
		for j, p := range ss.Ports {
			pp := sp.Child("ports").Index(j)
			if len(ss.Ports) > 1 && p.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if p.Name != "" {
				errs = append(errs, validateDNS1123Label(p.Name, pp.Child("name"))...)
			}
			for _, msg := range validation.IsValidPortNum(int(p.Port)) {
				errs = append(errs, field.Invalid(pp.Child("port"), p.Port, msg))
			}
			errs = append(errs, validateProtocol(p.Protocol, pp.Child("protocol"))...)
		}
	}
	return errs
}

func validateEndpointIP(ip string, p *field.Path) field.ErrorList {
	parsed := net.ParseIP(ip)
	var msg string
	switch {
	case parsed == nil:
		msg = "must be a valid IP address"
	case parsed.IsUnspecified():
		msg = fmt.Sprintf("may not be unspecified (%v)", ip)
	case parsed.IsLoopback():
		msg = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
	case parsed.IsLinkLocalUnicast():
		msg = "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
	case parsed.IsLinkLocalMulticast():
		msg = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
	default:
		return nil
	}
	// Endpoints name real pods; special addresses would let a service
	// redirect traffic to the node itself.
	return field.ErrorList{field.Invalid(p, ip, msg)}
}

// formatEndpoints is kubectl's: up to three ip:port pairs, then a count.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	more, count := false, 0
	add := func(s string) {
		if len(list) == max {
			more = true
			return
		}
		list = append(list, s)
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			// Headless services may have no ports.
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	ret := strings.Join(list, ",")
	if more {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	return ret
}
