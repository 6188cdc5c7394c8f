package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// podEdgesOf fills e with what the graph keeps of pod, reusing e's slice:
// its node and, unless it is a mirror pod (a kubelet's static pod, which
// may reference nothing), every object upstream's graph links to it — its
// ServiceAccount, the Secrets and ConfigMaps of upstream's
// VisitPodSecretNames/VisitPodConfigmapNames (all containers, ephemeral
// ones included), its PVCs (ephemeral volumes' generated ones too) and its
// ResourceClaims.
func podEdgesOf(pod *corev1.Pod, e *podEdges) {
	e.namespace, e.name, e.node = pod.Namespace, pod.Name, pod.Spec.NodeName
	e.refs = e.refs[:0]
	if e.node == "" {
		return
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return
	}
	add := func(k kind, name string) {
		if name == "" {
			return
		}
		for _, r := range e.refs {
			if r.kind == k && r.name == name {
				return
			}
		}
		e.refs = append(e.refs, podRef{k, name})
	}
	add(kindServiceAccount, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		add(kindSecret, s.Name)
	}
	visitContainers(&pod.Spec, func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, f := range from {
			if f.SecretRef != nil {
				add(kindSecret, f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				add(kindConfigMap, f.ConfigMapRef.Name)
			}
		}
		for _, v := range env {
			if v.ValueFrom == nil {
				continue
			}
			if v.ValueFrom.SecretKeyRef != nil {
				add(kindSecret, v.ValueFrom.SecretKeyRef.Name)
			}
			if v.ValueFrom.ConfigMapKeyRef != nil {
				add(kindConfigMap, v.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	})
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		volumeRefs(&vol.VolumeSource, add)
		switch {
		case vol.PersistentVolumeClaim != nil:
			add(kindPVC, vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			add(kindPVC, ephemeral.VolumeClaimName(pod, vol))
		}
	}
	for i := range pod.Spec.ResourceClaims {
		if name := resourceClaimName(pod, &pod.Spec.ResourceClaims[i]); name != "" {
			add(kindResourceClaim, name)
		}
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		add(kindResourceClaim, s.ResourceClaimName)
	}
}

// visitContainers calls f with the env and envFrom of every container:
// init, regular and ephemeral (upstream's AllContainers).
func visitContainers(spec *corev1.PodSpec, f func([]corev1.EnvVar, []corev1.EnvFromSource)) {
	for i := range spec.InitContainers {
		f(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		f(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		f(c.Env, c.EnvFrom)
	}
}

// volumeRefs visits the Secrets and ConfigMaps a volume source names, as
// upstream's VisitPodSecretNames and VisitPodConfigmapNames.
func volumeRefs(src *corev1.VolumeSource, add func(kind, string)) {
	switch {
	case src.AzureFile != nil:
		add(kindSecret, src.AzureFile.SecretName)
	case src.CephFS != nil:
		if src.CephFS.SecretRef != nil {
			add(kindSecret, src.CephFS.SecretRef.Name)
		}
	case src.Cinder != nil:
		if src.Cinder.SecretRef != nil {
			add(kindSecret, src.Cinder.SecretRef.Name)
		}
	case src.FlexVolume != nil:
		if src.FlexVolume.SecretRef != nil {
			add(kindSecret, src.FlexVolume.SecretRef.Name)
		}
	case src.Projected != nil:
		for j := range src.Projected.Sources {
			p := &src.Projected.Sources[j]
			if p.Secret != nil {
				add(kindSecret, p.Secret.Name)
			}
			if p.ConfigMap != nil {
				add(kindConfigMap, p.ConfigMap.Name)
			}
		}
	case src.RBD != nil:
		if src.RBD.SecretRef != nil {
			add(kindSecret, src.RBD.SecretRef.Name)
		}
	case src.Secret != nil:
		add(kindSecret, src.Secret.SecretName)
	case src.ConfigMap != nil:
		add(kindConfigMap, src.ConfigMap.Name)
	case src.ScaleIO != nil:
		if src.ScaleIO.SecretRef != nil {
			add(kindSecret, src.ScaleIO.SecretRef.Name)
		}
	case src.ISCSI != nil:
		if src.ISCSI.SecretRef != nil {
			add(kindSecret, src.ISCSI.SecretRef.Name)
		}
	case src.StorageOS != nil:
		if src.StorageOS.SecretRef != nil {
			add(kindSecret, src.StorageOS.SecretRef.Name)
		}
	case src.CSI != nil:
		if src.CSI.NodePublishSecretRef != nil {
			add(kindSecret, src.CSI.NodePublishSecretRef.Name)
		}
	}
}

// resourceClaimName is the ResourceClaim a pod's claim entry stands for,
// as upstream's resourceclaim.Name: the named claim, or the one generated
// from a template once the pod's status records it; "" if not yet known.
func resourceClaimName(pod *corev1.Pod, c *corev1.PodResourceClaim) string {
	switch {
	case c.ResourceClaimName != nil:
		return *c.ResourceClaimName
	case c.ResourceClaimTemplateName != nil:
		for _, s := range pod.Status.ResourceClaimStatuses {
			if s.Name == c.Name && s.ResourceClaimName != nil {
				return *s.ResourceClaimName
			}
		}
	}
	return ""
}

// pvEdgesOf returns what the graph keeps of pv: its claim and the secrets
// a kubelet reads for it (upstream's VisitPVSecretNames with
// kubeletVisible; a CSI driver's controller secrets are not).
func pvEdgesOf(pv *corev1.PersistentVolume) *pvEdges {
	e := &pvEdges{name: pv.Name}
	if pv.Spec.ClaimRef == nil {
		return e
	}
	e.claimNamespace, e.claimName = pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name
	claimNS := e.claimNamespace
	add := func(namespace, name string) {
		if name != "" {
			e.secrets = append(e.secrets, objectRef{namespace, name})
		}
	}
	// orClaim is the namespace of a SecretReference that may leave it
	// empty to mean the claim's.
	orClaim := func(ns string) string {
		if ns != "" {
			return ns
		}
		return claimNS
	}
	src := &pv.Spec.PersistentVolumeSource
	switch {
	case src.AzureFile != nil:
		ns := claimNS
		if src.AzureFile.SecretNamespace != nil && *src.AzureFile.SecretNamespace != "" {
			ns = *src.AzureFile.SecretNamespace
		}
		add(ns, src.AzureFile.SecretName)
	case src.CephFS != nil:
		if r := src.CephFS.SecretRef; r != nil {
			add(orClaim(r.Namespace), r.Name)
		}
	case src.Cinder != nil:
		if r := src.Cinder.SecretRef; r != nil {
			add(r.Namespace, r.Name)
		}
	case src.FlexVolume != nil:
		if r := src.FlexVolume.SecretRef; r != nil {
			add(orClaim(r.Namespace), r.Name)
		}
	case src.RBD != nil:
		if r := src.RBD.SecretRef; r != nil {
			add(orClaim(r.Namespace), r.Name)
		}
	case src.ScaleIO != nil:
		if r := src.ScaleIO.SecretRef; r != nil {
			add(orClaim(r.Namespace), r.Name)
		}
	case src.ISCSI != nil:
		if r := src.ISCSI.SecretRef; r != nil {
			add(orClaim(r.Namespace), r.Name)
		}
	case src.StorageOS != nil:
		if r := src.StorageOS.SecretRef; r != nil {
			add(r.Namespace, r.Name)
		}
	case src.CSI != nil:
		for _, r := range []*corev1.SecretReference{src.CSI.NodePublishSecretRef, src.CSI.NodeStageSecretRef, src.CSI.NodeExpandSecretRef} {
			if r != nil {
				add(r.Namespace, r.Name)
			}
		}
	}
	return e
}
