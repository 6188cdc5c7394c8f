package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// ensureClusterInfo writes kube-public/cluster-info as kubeadm's
// bootstrap-token phase does: a kubeconfig holding only the cluster (the
// server URL and the CA), which a joining node may read anonymously and
// verify with the JWS signatures the bootstrapsigner controller adds for
// each signing token. An existing ConfigMap whose kubeconfig differs (a
// new URL or CA) gets the new one; its signatures are the signer's.
func ensureClusterInfo(ctx context.Context, serverURL string, creds *pki.Credentials) error {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: serverURL, BearerToken: creds.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: creds.CAPEM}})
	if err != nil {
		return err
	}
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{
		"": {Server: serverURL, CertificateAuthorityData: creds.CAPEM},
	}})
	if err != nil {
		return fmt.Errorf("encoding cluster-info: %w", err)
	}
	cms := cs.CoreV1().ConfigMaps(metav1.NamespacePublic)
	cm, err := cms.Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
			Data:       map[string]string{bootstrapapi.KubeConfigKey: string(kubeconfig)},
		}, metav1.CreateOptions{})
	case err == nil && cm.Data[bootstrapapi.KubeConfigKey] != string(kubeconfig):
		cm = cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[bootstrapapi.KubeConfigKey] = string(kubeconfig)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing %s/%s: %w", metav1.NamespacePublic, bootstrapapi.ConfigMapClusterInfo, err)
	}
	return nil
}
