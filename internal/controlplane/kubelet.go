package controlplane

import (
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/kubeletclient"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// KubeletOptions are upstream's --kubelet-* flags: how the API server
// reaches kubelets for logs, exec, attach, port-forward and nodes/proxy.
type KubeletOptions struct {
	// CertificateAuthority verifies kubelet serving certificates
	// (--kubelet-certificate-authority). Default: the cluster CA, which
	// signs kubernetes.io/kubelet-serving certificates.
	CertificateAuthority string
	// ClientCertificate and ClientKey are the API server's client
	// certificate (--kubelet-client-certificate, --kubelet-client-key).
	// Default: one for kube-apiserver-kubelet-client issued from the
	// cluster CA into the data directory, and bound to
	// system:kubelet-api-admin.
	ClientCertificate, ClientKey string
	// PreferredAddressTypes (--kubelet-preferred-address-types; default
	// kubeletclient.DefaultAddressTypes: InternalIP first, as kubeadm).
	PreferredAddressTypes []corev1.NodeAddressType
	// Timeout bounds dialing a kubelet (--kubelet-timeout, default 5 s).
	Timeout time.Duration
	// AllowLoopbackProxy lets pods/proxy, services/proxy and nodes/proxy
	// reach 127.0.0.0/8 (hollow-node clusters); upstream refuses it.
	AllowLoopbackProxy bool
}

// apiserverConfig builds the API server's kubelet client from o, filling
// the defaults from creds.
func (o KubeletOptions) apiserverConfig(creds *pki.Credentials) (apiserver.KubeletConfig, error) {
	ca := o.CertificateAuthority
	if ca == "" {
		ca = filepath.Join(creds.Dir, pki.CACertFile)
	}
	cert, key := o.ClientCertificate, o.ClientKey
	var user string
	if cert == "" && key == "" {
		var err error
		if cert, key, err = creds.EnsureKubeletClient(0); err != nil {
			return apiserver.KubeletConfig{}, err
		}
		user = pki.KubeletClientUser
	}
	client, err := kubeletclient.New(kubeletclient.Config{
		CAFile: ca, CertFile: cert, KeyFile: key,
		PreferredAddressTypes: o.PreferredAddressTypes, Timeout: o.Timeout,
	})
	if err != nil {
		return apiserver.KubeletConfig{}, err
	}
	return apiserver.KubeletConfig{Client: client, AllowLoopbackProxy: o.AllowLoopbackProxy, ClientUser: user}, nil
}
