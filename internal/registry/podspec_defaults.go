package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
)

// This file mirrors upstream's SetDefaults_PodSpec, SetDefaults_Container
// and friends (pkg/apis/core/v1/defaults.go). It is shared by pods and every
// workload's pod template, as upstream's defaulting recurses into templates.

func ptrTo[T any](v T) *T { return &v }

// defaultPodSpec applies the scheme defaults to a pod spec.
func defaultPodSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptrTo(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], s.HostNetwork)
	}
	for i := range s.EphemeralContainers {
		defaultContainer((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon), false)
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		// With host networking the container port is the host port.
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	// SetDefaults_Pod: a request left out where a limit is given defaults
	// to the limit.
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = limit.DeepCopy()
		}
	}
	for i := range c.Env {
		if f := c.Env[i].ValueFrom; f != nil && f.FieldRef != nil && f.FieldRef.APIVersion == "" {
			f.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
}

// imageTag returns the tag an image reference resolves to: "latest" when
// it has neither tag nor digest (as upstream's parsers.ParseImageName), ""
// when only a digest pins it.
func imageTag(image string) string {
	ref, digest, hasDigest := strings.Cut(image, "@")
	_ = digest
	name := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
	}
}

func defaultVolume(v *corev1.Volume) {
	vs := &v.VolumeSource
	if volumeSourceCount(vs) == 0 {
		vs.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := ptrTo(corev1.SecretVolumeSourceDefaultMode)
	switch {
	case vs.Secret != nil && vs.Secret.DefaultMode == nil:
		vs.Secret.DefaultMode = mode
	case vs.ConfigMap != nil && vs.ConfigMap.DefaultMode == nil:
		vs.ConfigMap.DefaultMode = mode
	case vs.DownwardAPI != nil && vs.DownwardAPI.DefaultMode == nil:
		vs.DownwardAPI.DefaultMode = mode
	case vs.Projected != nil && vs.Projected.DefaultMode == nil:
		vs.Projected.DefaultMode = mode
	case vs.HostPath != nil && vs.HostPath.Type == nil:
		vs.HostPath.Type = ptrTo(corev1.HostPathUnset)
	}
	if vs.DownwardAPI != nil {
		for i := range vs.DownwardAPI.Items {
			if f := vs.DownwardAPI.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	}
}

// volumeSourceCount counts the volume types set, for defaulting (none →
// emptyDir) and validation (exactly one).
func volumeSourceCount(vs *corev1.VolumeSource) int {
	n := 0
	for _, set := range []bool{
		vs.HostPath != nil, vs.EmptyDir != nil, vs.GCEPersistentDisk != nil, vs.AWSElasticBlockStore != nil,
		vs.GitRepo != nil, vs.Secret != nil, vs.NFS != nil, vs.ISCSI != nil, vs.Glusterfs != nil,
		vs.PersistentVolumeClaim != nil, vs.RBD != nil, vs.FlexVolume != nil, vs.Cinder != nil,
		vs.CephFS != nil, vs.Flocker != nil, vs.DownwardAPI != nil, vs.FC != nil, vs.AzureFile != nil,
		vs.ConfigMap != nil, vs.VsphereVolume != nil, vs.Quobyte != nil, vs.AzureDisk != nil,
		vs.PhotonPersistentDisk != nil, vs.Projected != nil, vs.PortworxVolume != nil, vs.ScaleIO != nil,
		vs.StorageOS != nil, vs.CSI != nil, vs.Ephemeral != nil, vs.Image != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

// defaultPodTemplate defaults a workload's pod template.
func defaultPodTemplate(t *corev1.PodTemplateSpec) { defaultPodSpec(&t.Spec) }

// defaultTolerations adds what the DefaultTolerationSeconds admission plugin
// adds: tolerate not-ready and unreachable nodes for 300s unless the pod
// already tolerates those taints.
func defaultTolerations(s *corev1.PodSpec) {
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		taint := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
		tolerated := false
		for i := range s.Tolerations {
			if s.Tolerations[i].ToleratesTaint(klog.Logger{}, &taint, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
				TolerationSeconds: ptrTo(int64(300)),
			})
		}
	}
}

// intOrStringZero reports an unset target port.
func intOrStringZero(v intstr.IntOrString) bool {
	return v == intstr.FromInt32(0) || v == intstr.FromString("")
}
