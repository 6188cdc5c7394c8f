package main

import (
	"flag"
	"time"

	"github.com/myriad-k8s/myriad/internal/controlplane"
	"github.com/myriad-k8s/myriad/internal/kubeletclient"
)

// kubeletFlags are upstream's --kubelet-* flags, onto o.
func kubeletFlags(fs *flag.FlagSet, o *controlplane.KubeletOptions) {
	fs.StringVar(&o.CertificateAuthority, "kubelet-certificate-authority", "", "CA bundle kubelet serving certificates are verified against (default: the cluster CA)")
	fs.StringVar(&o.ClientCertificate, "kubelet-client-certificate", "", "client certificate presented to kubelets (default: one for kube-apiserver-kubelet-client from the cluster CA, bound to system:kubelet-api-admin)")
	fs.StringVar(&o.ClientKey, "kubelet-client-key", "", "key of --kubelet-client-certificate")
	fs.DurationVar(&o.Timeout, "kubelet-timeout", 5*time.Second, "bound on dialing a kubelet and its TLS handshake (streams themselves are not time-limited)")
	fs.Func("kubelet-preferred-address-types", "comma-separated Node address types to dial kubelets at, in order (default kubeadm's InternalIP,ExternalIP,Hostname, then InternalDNS,ExternalDNS; upstream's default puts Hostname first)", func(v string) error {
		types, err := kubeletclient.ParseAddressTypes(v)
		o.PreferredAddressTypes = types
		return err
	})
	fs.BoolVar(&o.AllowLoopbackProxy, "kubelet-proxy-allow-loopback", false, "let pods/proxy, services/proxy and nodes/proxy reach loopback addresses (hollow-node clusters; upstream refuses them)")
}
