package registry

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file mirrors the parts of upstream's ValidatePodSpec users run into,
// with the same field paths, error types and messages. It does not try to be
// exhaustive: rules that guard rarely used fields are left to the node.

func validateDNS1123Label(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func validateDNS1123Subdomain(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// validatePodSpec validates a pod's or pod template's spec at p.
func validatePodSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, vErrs := validateVolumes(s.Volumes, p.Child("volumes"))
	errs = append(errs, vErrs...)

	// Container names are unique across init, regular and ephemeral
	// containers.
	names := sets.New[string]()
	for i := range s.InitContainers {
		c, ip := &s.InitContainers[i], p.Child("initContainers").Index(i)
		errs = append(errs, validateContainer(c, names, volumes, ip)...)
		errs = append(errs, validateInitContainerOnly(c, ip)...)
	}
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), ""))
	}
	for i := range s.Containers {
		errs = append(errs, validateContainer(&s.Containers[i], names, volumes, p.Child("containers").Index(i))...)
	}

	errs = append(errs, validateRestartPolicy(s.RestartPolicy, p.Child("restartPolicy"))...)
	errs = append(errs, validateOneOf(s.DNSPolicy, p.Child("dnsPolicy"), corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	if s.ServiceAccountName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(p.Child("serviceAccountName"), s.ServiceAccountName, msg))
		}
	}
	if s.Hostname != "" {
		errs = append(errs, validateDNS1123Label(s.Hostname, p.Child("hostname"))...)
	}
	if s.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(s.Subdomain, p.Child("subdomain"))...)
	}
	if s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds < 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *s.TerminationGracePeriodSeconds, apivalidation.IsNegativeErrorMsg))
	}
	if s.ActiveDeadlineSeconds != nil {
		if v := *s.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	errs = append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	if s.HostNetwork {
		errs = append(errs, validateHostNetworkPorts(s, p)...)
	}
	return errs
}

// validateInitContainerOnly: probes and lifecycle hooks only make sense
// for sidecars (init containers with restartPolicy Always), which keep
// running.
func validateInitContainerOnly(c *corev1.Container, p *field.Path) field.ErrorList {
	if isRestartableInit(c) {
		return nil
	}
	var errs field.ErrorList
	const msg = "may not be set for init containers without restartPolicy=Always"
	if c.RestartPolicy != nil {
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{c.Lifecycle != nil, "lifecycle"}, {c.LivenessProbe != nil, "livenessProbe"}, {c.ReadinessProbe != nil, "readinessProbe"}, {c.StartupProbe != nil, "startupProbe"}} {
		if f.set {
			errs = append(errs, field.Forbidden(p.Child(f.name), msg))
		}
	}
	return errs
}

// validateHostNetworkPorts: with the host's network a container port is a
// host port, so the two must agree.
func validateHostNetworkPorts(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(cs []corev1.Container, cp *field.Path) {
		for i, c := range cs {
			for j, port := range c.Ports {
				if port.HostPort != port.ContainerPort {
					errs = append(errs, field.Invalid(cp.Index(i).Child("ports").Index(j).Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	check(s.InitContainers, p.Child("initContainers"))
	check(s.Containers, p.Child("containers"))
	return errs
}

// validateOneOf checks an enum field: Required when empty, NotSupported
// when not one of valid.
func validateOneOf[E ~string](v E, p *field.Path, valid ...E) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	for _, ok := range valid {
		if v == ok {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, v, valid)}
}

func validateRestartPolicy(v corev1.RestartPolicy, p *field.Path) field.ErrorList {
	return validateOneOf(v, p, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)
}

func validateVolumes(vols []corev1.Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range vols {
		v, ip := &vols[i], p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(ip.Child("name"), ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(ip.Child("name"), v.Name))
		default:
			errs = append(errs, validateDNS1123Label(v.Name, ip.Child("name"))...)
			names.Insert(v.Name)
		}
		switch volumeSourceCount(&v.VolumeSource) {
		case 0:
			errs = append(errs, field.Required(ip, "must specify a volume type"))
		case 1:
		default:
			errs = append(errs, field.Forbidden(ip, "may not specify more than 1 volume type"))
		}
		if pvc := v.PersistentVolumeClaim; pvc != nil && pvc.ClaimName == "" {
			errs = append(errs, field.Required(ip.Child("persistentVolumeClaim", "claimName"), ""))
		}
		if cm := v.ConfigMap; cm != nil && cm.Name == "" {
			errs = append(errs, field.Required(ip.Child("configMap", "name"), ""))
		}
		if sec := v.Secret; sec != nil && sec.SecretName == "" {
			errs = append(errs, field.Required(ip.Child("secret", "secretName"), ""))
		}
		if hp := v.HostPath; hp != nil && hp.Path == "" {
			errs = append(errs, field.Required(ip.Child("hostPath", "path"), ""))
		}
	}
	return names, errs
}

func validateContainer(c *corev1.Container, names, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(p.Child("name"), ""))
	case names.Has(c.Name):
		errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
	default:
		errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
		names.Insert(c.Name)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, validateOneOf(c.ImagePullPolicy, p.Child("imagePullPolicy"), corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	errs = append(errs, validateOneOf(c.TerminationMessagePolicy, p.Child("terminationMessagePolicy"), corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, p.Child("volumeMounts"))...)
	errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	for _, pr := range []struct {
		probe *corev1.Probe
		name  string
	}{{c.LivenessProbe, "livenessProbe"}, {c.ReadinessProbe, "readinessProbe"}, {c.StartupProbe, "startupProbe"}} {
		errs = append(errs, validateProbe(pr.probe, p.Child(pr.name))...)
	}
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		ip := p.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(ip.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(ip.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(ip.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(ip.Child("hostPort"), port.HostPort, msg))
			}
		}
		errs = append(errs, validateProtocol(port.Protocol, ip.Child("protocol"))...)
	}
	return errs
}

func validateProtocol(v corev1.Protocol, p *field.Path) field.ErrorList {
	return validateOneOf(v, p, corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)
}

func validateEnv(env []corev1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		ip := p.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			// Relaxed names are the default since RelaxedEnvironmentVariableValidation went GA.
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(ip.Child("name"), ev.Name, msg))
			}
		}
		if ev.Value != "" && ev.ValueFrom != nil {
			errs = append(errs, field.Invalid(ip.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		ip := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(ip.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(ip.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(ip.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
	}
	return errs
}

func validateProbe(pr *corev1.Probe, p *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	for _, set := range []bool{pr.Exec != nil, pr.HTTPGet != nil, pr.TCPSocket != nil, pr.GRPC != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(p, "must specify a handler type"))
	case n > 1:
		errs = append(errs, field.Forbidden(p, "may not specify more than 1 handler type"))
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.InitialDelaySeconds), p.Child("initialDelaySeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.TimeoutSeconds), p.Child("timeoutSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.PeriodSeconds), p.Child("periodSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.SuccessThreshold), p.Child("successThreshold"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(pr.FailureThreshold), p.Child("failureThreshold"))...)
	return errs
}

// isNativeResource is upstream's helper: no domain, or a kubernetes.io one.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// overcommitAllowed: native resources other than huge pages may request
// less than their limit; extended resources and huge pages may not.
func overcommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func validateContainerResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	if !isNativeResource(name) {
		return metav1validation.ValidateLabelName(string(name), p) // an extended resource: a qualified name
	}
	switch {
	case name == corev1.ResourceCPU, name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return nil
	}
	return field.ErrorList{field.Invalid(p, name, "must be a standard resource for containers")}
}

func validateQuantity(name corev1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg)}
	}
	// Only cpu (and, upstream, a few storage classes of quantity) may be fractional.
	if name != corev1.ResourceCPU && q.MilliValue()%1000 != 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must be an integer")}
	}
	return nil
}

func validateResources(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := p.Child("limits"), p.Child("requests")
	for name, q := range r.Limits {
		kp := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, kp)...)
		errs = append(errs, validateQuantity(name, q, kp)...)
	}
	for name, q := range r.Requests {
		kp := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, kp)...)
		errs = append(errs, validateQuantity(name, q, kp)...)
		limit, ok := r.Limits[name]
		switch {
		case ok && q.Cmp(limit) != 0 && !overcommitAllowed(name):
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case ok && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !ok && !overcommitAllowed(name):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

func validateTolerations(ts []corev1.Toleration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		ip := p.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, ip.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(ip.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(ip.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(ip.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(ip.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			errs = append(errs, validateOneOf(t.Effect, ip.Child("effect"), corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)...)
		}
	}
	return errs
}

// validatePodTemplate validates a workload's pod template: labels and
// annotations, the spec, and the workload-only rules (restartPolicy Always,
// no activeDeadlineSeconds).
func validatePodTemplate(t *corev1.PodTemplateSpec, kind string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("metadata")
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, mp.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, mp.Child("annotations"))...)
	sp := p.Child("spec")
	errs = append(errs, validatePodSpec(&t.Spec, sp)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways && t.Spec.RestartPolicy != "" {
		errs = append(errs, field.NotSupported(sp.Child("restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(sp.Child("activeDeadlineSeconds"), fmt.Sprintf("activeDeadlineSeconds in %s is not Supported", kind)))
	}
	return errs
}
