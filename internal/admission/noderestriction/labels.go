package noderestriction

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// kubeletLabels are the kubernetes.io labels a kubelet may set on its own
// Node (upstream's k8s.io/kubelet/pkg/apis.KubeletLabels).
var kubeletLabels = map[string]bool{
	corev1.LabelHostname:                true,
	corev1.LabelTopologyZone:            true,
	corev1.LabelTopologyRegion:          true,
	corev1.LabelFailureDomainBetaZone:   true,
	corev1.LabelFailureDomainBetaRegion: true,
	corev1.LabelInstanceType:            true,
	corev1.LabelInstanceTypeStable:      true,
	corev1.LabelOSStable:                true,
	corev1.LabelArchStable:              true,
	"beta.kubernetes.io/os":             true,
	"beta.kubernetes.io/arch":           true,
}

// kubeletLabelNamespaces are the label namespaces (and their
// subdomains) a kubelet may use freely: kubelet.kubernetes.io and
// node.kubernetes.io.
var kubeletLabelNamespaces = []string{corev1.LabelNamespaceSuffixKubelet, corev1.LabelNamespaceSuffixNode}

// isKubeletLabel is upstream's IsKubeletLabel.
func isKubeletLabel(key string) bool {
	if kubeletLabels[key] {
		return true
	}
	ns := labelNamespace(key)
	for _, allowed := range kubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}

// isKubernetesLabel: the kubernetes.io and k8s.io label namespaces and
// their subdomains.
func isKubernetesLabel(key string) bool {
	ns := labelNamespace(key)
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") ||
		ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

func labelNamespace(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// modifiedLabels are the keys added, removed or changed between a and b.
func modifiedLabels(a, b map[string]string) map[string]bool {
	modified := map[string]bool{}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			modified[k] = true
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			modified[k] = true
		}
	}
	return modified
}

// forbiddenLabels are the modified labels a node may not touch, sorted:
// anything under node-restriction.kubernetes.io (which exists so that
// admins can label nodes in a way the nodes cannot fake), and any other
// kubernetes.io or k8s.io label but the kubelet's own.
func forbiddenLabels(modified map[string]bool) []string {
	var out []string
	for label := range modified {
		ns := labelNamespace(label)
		if ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction) ||
			(isKubernetesLabel(label) && !isKubeletLabel(label)) {
			out = append(out, label)
		}
	}
	sort.Strings(out)
	return out
}
