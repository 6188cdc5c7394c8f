package noderestriction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// hasAPIObjectReference is upstream's podutil.HasAPIObjectReference: a
// mirror pod (a static pod the kubelet reports) may not reference API
// objects, since the node authorizer would grant the node read access to
// them through it. resource names what it references.
func hasAPIObjectReference(pod *corev1.Pod) (bool, string, error) {
	if pod.Spec.ServiceAccountName != "" {
		return true, "serviceaccounts", nil
	}
	if hasSecretReference(pod) {
		return true, "secrets", nil
	}
	if hasConfigMapReference(pod) {
		return true, "configmaps", nil
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return true, "resourceclaims", nil
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.AWSElasticBlockStore != nil, v.AzureDisk != nil, v.CephFS != nil, v.Cinder != nil,
			v.DownwardAPI != nil, v.EmptyDir != nil, v.FC != nil, v.FlexVolume != nil, v.Flocker != nil, v.GCEPersistentDisk != nil,
			v.GitRepo != nil, v.HostPath != nil, v.Image != nil, v.ISCSI != nil, v.NFS != nil, v.PhotonPersistentDisk != nil,
			v.PortworxVolume != nil, v.Quobyte != nil, v.RBD != nil, v.ScaleIO != nil, v.StorageOS != nil, v.VsphereVolume != nil:
			continue
		case v.ConfigMap != nil:
			return true, "configmaps (via configmap volumes)", nil
		case v.Secret != nil:
			return true, "secrets (via secret volumes)", nil
		case v.CSI != nil:
			return true, "csidrivers (via CSI volumes)", nil
		case v.Glusterfs != nil:
			return true, "endpoints (via glusterFS volumes)", nil
		case v.PersistentVolumeClaim != nil:
			return true, "persistentvolumeclaims", nil
		case v.Ephemeral != nil:
			return true, "persistentvolumeclaims (via ephemeral volumes)", nil
		case v.AzureFile != nil:
			return true, "secrets (via azureFile volumes)", nil
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					return true, "configmaps (via projected volumes)", nil
				case s.Secret != nil:
					return true, "secrets (via projected volumes)", nil
				case s.ServiceAccountToken != nil:
					return true, "serviceaccounts (via projected volumes)", nil
				case s.ClusterTrustBundle != nil:
					return true, "clustertrustbundles", nil
				case s.PodCertificate != nil:
					return true, "podcertificates", nil
				case s.DownwardAPI != nil:
					continue
				default:
					return true, "", fmt.Errorf("unknown source for projected volume %q", v.Name)
				}
			}
		default:
			return true, "", fmt.Errorf("unknown volume type for volume  %q", v.Name)
		}
	}
	return false, "", nil
}

// allContainers visits init, regular and ephemeral containers' env.
func allContainers(spec *corev1.PodSpec, f func(env []corev1.EnvVar, from []corev1.EnvFromSource) bool) bool {
	for _, c := range spec.InitContainers {
		if f(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range spec.Containers {
		if f(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range spec.EphemeralContainers {
		if f(c.Env, c.EnvFrom) {
			return true
		}
	}
	return false
}

// hasSecretReference: upstream's VisitPodSecretNames finds any name.
func hasSecretReference(pod *corev1.Pod) bool {
	for _, s := range pod.Spec.ImagePullSecrets {
		if s.Name != "" {
			return true
		}
	}
	if allContainers(&pod.Spec, func(env []corev1.EnvVar, from []corev1.EnvFromSource) bool {
		for _, f := range from {
			if f.SecretRef != nil && f.SecretRef.Name != "" {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != "" {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for _, v := range pod.Spec.Volumes {
		s := &v.VolumeSource
		switch {
		case s.AzureFile != nil && s.AzureFile.SecretName != "",
			s.CephFS != nil && s.CephFS.SecretRef != nil && s.CephFS.SecretRef.Name != "",
			s.Cinder != nil && s.Cinder.SecretRef != nil && s.Cinder.SecretRef.Name != "",
			s.FlexVolume != nil && s.FlexVolume.SecretRef != nil && s.FlexVolume.SecretRef.Name != "",
			s.RBD != nil && s.RBD.SecretRef != nil && s.RBD.SecretRef.Name != "",
			s.Secret != nil && s.Secret.SecretName != "",
			s.ScaleIO != nil && s.ScaleIO.SecretRef != nil && s.ScaleIO.SecretRef.Name != "",
			s.ISCSI != nil && s.ISCSI.SecretRef != nil && s.ISCSI.SecretRef.Name != "",
			s.StorageOS != nil && s.StorageOS.SecretRef != nil && s.StorageOS.SecretRef.Name != "",
			s.CSI != nil && s.CSI.NodePublishSecretRef != nil && s.CSI.NodePublishSecretRef.Name != "":
			return true
		case s.Projected != nil:
			for _, p := range s.Projected.Sources {
				if p.Secret != nil && p.Secret.Name != "" {
					return true
				}
			}
		}
	}
	return false
}

// hasConfigMapReference: upstream's VisitPodConfigmapNames finds any name.
func hasConfigMapReference(pod *corev1.Pod) bool {
	if allContainers(&pod.Spec, func(env []corev1.EnvVar, from []corev1.EnvFromSource) bool {
		for _, f := range from {
			if f.ConfigMapRef != nil && f.ConfigMapRef.Name != "" {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != "" {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil && v.ConfigMap.Name != "":
			return true
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil && p.ConfigMap.Name != "" {
					return true
				}
			}
		}
	}
	return false
}
