package pki

import (
	"fmt"
	"net"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names used inside the generated kubeconfig.
const (
	KubeconfigCluster = "myriad"
	KubeconfigUser    = "admin"
	KubeconfigContext = "myriad"
)

// WriteKubeconfig writes (0600) an admin kubeconfig for serverURL that
// trusts the CA and authenticates with the admin token — usable as is by
// kubectl --kubeconfig and client-go's clientcmd.
func WriteKubeconfig(path, serverURL string, creds *Credentials) error {
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = serverURL
	cluster.CertificateAuthorityData = creds.CAPEM
	cfg.Clusters[KubeconfigCluster] = cluster

	user := clientcmdapi.NewAuthInfo()
	user.Token = creds.Token
	cfg.AuthInfos[KubeconfigUser] = user

	kctx := clientcmdapi.NewContext()
	kctx.Cluster = KubeconfigCluster
	kctx.AuthInfo = KubeconfigUser
	kctx.Namespace = "default"
	cfg.Contexts[KubeconfigContext] = kctx
	cfg.CurrentContext = KubeconfigContext

	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: encode kubeconfig: %w", err)
	}
	// Atomic: scripts and tests wait for the file to appear and read it at
	// once; a half-written one would fail to load. The token in it makes it
	// a secret (0600).
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("pki: write kubeconfig: %w", err)
	}
	return nil
}

// ServerURL is the https URL clients on this machine should use for a server
// bound to bindAddress:port. An unspecified or empty bind address (all
// interfaces) becomes 127.0.0.1, which the serving certificate always covers.
func ServerURL(bindAddress string, port int) string {
	host := bindAddress
	if ip := net.ParseIP(bindAddress); bindAddress == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}
