package registry

import (
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func nodeResource(c clock) *Resource {
	gv := v1(coreGroup)
	// Nodes may set status on create (the kubelet registers with it), so
	// there is no resetStatus.
	s := strategy[*corev1.Node]{behavior[*corev1.Node]{
		name:           apivalidation.NameIsDNSSubdomain,
		keepStatus:     func(obj, old *corev1.Node) { obj.Status = old.Status },
		keepSpec:       func(obj, old *corev1.Node) { obj.Spec = old.Spec },
		defaults:       defaultNode,
		validate:       validateNode,
		validateUpdate: validateNodeUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Node",
		Resource:         "nodes",
		SingularName:     "node",
		ShortNames:       []string{"no"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status", "proxy"},
		New:              func() runtime.Object { return &corev1.Node{} },
		NewList:          func() runtime.Object { return &corev1.NodeList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(o runtime.Object) fields.Set { return nodeFields(o.(*corev1.Node)) },
		Table:            nodeTable(c),
		Heartbeat:        nodeHeartbeat,
		StorageKeyPrefix: storagePrefix(gv, "nodes"),
	}
}

// defaultNode is SetDefaults_NodeStatus (allocatable defaults to capacity)
// plus what upstream's v1 conversion does: podCIDRs follows podCIDR.
func defaultNode(n *corev1.Node) {
	if n.Spec.PodCIDR != "" && len(n.Spec.PodCIDRs) == 0 {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	if n.Status.Allocatable == nil && len(n.Status.Capacity) > 0 {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}

func validateNode(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	errs = append(errs, validateTaints(n.Spec.Taints, sp.Child("taints"))...)
	for i, cidr := range n.Spec.PodCIDRs {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			errs = append(errs, field.Invalid(sp.Child("podCIDRs").Index(i), cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
		}
	}
	if len(n.Spec.PodCIDRs) > 2 {
		errs = append(errs, field.Invalid(sp.Child("podCIDRs"), n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
	}
	for name, q := range n.Status.Capacity {
		errs = append(errs, validateNonnegativeQuantity(q.Sign(), q.String(), field.NewPath("status", "capacity").Key(string(name)))...)
	}
	for name, q := range n.Status.Allocatable {
		errs = append(errs, validateNonnegativeQuantity(q.Sign(), q.String(), field.NewPath("status", "allocatable").Key(string(name)))...)
	}
	return errs
}

func validateNonnegativeQuantity(sign int, s string, p *field.Path) field.ErrorList {
	if sign < 0 {
		return field.ErrorList{field.Invalid(p, s, apivalidation.IsNegativeErrorMsg)}
	}
	return nil
}

func validateTaints(taints []corev1.Taint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, t := range taints {
		ip := p.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, ip.Child("key"))...)
		if t.Value != "" {
			errs = append(errs, metav1validation.ValidateLabels(map[string]string{t.Key: t.Value}, ip.Child("value"))...)
		}
		errs = append(errs, validateOneOf(t.Effect, ip.Child("effect"), corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)...)
		k := t.Key + "/" + string(t.Effect)
		if seen[k] {
			errs = append(errs, field.Duplicate(ip, "taints must be unique by key and effect pair"))
		}
		seen[k] = true
	}
	return errs
}

func validateNodeUpdate(obj, old *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if len(old.Spec.PodCIDRs) > 0 && semanticChanged(obj.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(sp.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && obj.Spec.ProviderID != old.Spec.ProviderID {
		errs = append(errs, field.Forbidden(sp.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

func nodeFields(n *corev1.Node) fields.Set {
	return fields.Set{"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}
}

// nodeTable is upstream's printNode.
func nodeTable(c clock) TableConvertor {
	return table[*corev1.Node]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Status", "string", "The status of the node"),
			col("Roles", "string", "The roles of the node"),
			ageColumn(),
			col("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
			wide(col("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
			wide(col("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
			wide(col("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"])),
			wide(col("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"])),
			wide(col("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"])),
		},
		cells: func(n *corev1.Node) []interface{} {
			var status []string
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						status = append(status, string(cond.Type))
					} else {
						status = append(status, "Not"+string(cond.Type))
					}
					break
				}
			}
			if len(status) == 0 {
				status = append(status, "Unknown")
			}
			if n.Spec.Unschedulable {
				status = append(status, "SchedulingDisabled")
			}
			info := n.Status.NodeInfo
			return []interface{}{
				n.Name, strings.Join(status, ","), orNone(strings.Join(nodeRoles(n), ",")), c.since(n.CreationTimestamp), info.KubeletVersion,
				orNone(nodeAddress(n, corev1.NodeInternalIP)), orNone(nodeAddress(n, corev1.NodeExternalIP)),
				orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion),
			}
		},
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// nodeRoles reads node-role.kubernetes.io/<role> and kubernetes.io/role
// labels, sorted, as kubectl does.
func nodeRoles(n *corev1.Node) []string {
	roles := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" {
				roles[role] = true
			}
		case k == "kubernetes.io/role" && v != "":
			roles[v] = true
		}
	}
	out := make([]string, 0, len(roles))
	for r := range roles {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// nodeAddress is the first address of type t; kubectl prints just one.
func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}
