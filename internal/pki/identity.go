package pki

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Well-known identities of the control plane's own components, as
// upstream's kubeadm issues them: the RBAC default policy binds its roles
// to these names.
const (
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
	// NodesGroup is the group of every node identity, system:node:<name>.
	NodesGroup = "system:nodes"
)

// NodeUser is the user name of node name's identity.
func NodeUser(name string) string { return "system:node:" + name }

// Identity is who a client certificate says its holder is.
type Identity struct {
	User   string
	Groups []string
	// Validity is how long the certificate is valid (default one year).
	Validity time.Duration
}

// NodeIdentity is node name's identity: system:node:<name> in
// system:nodes, what the Node authorizer and NodeRestriction recognize.
func NodeIdentity(name string) Identity {
	return Identity{User: NodeUser(name), Groups: []string{NodesGroup}}
}

func (id Identity) validity() time.Duration {
	if id.Validity <= 0 {
		return 365 * 24 * time.Hour
	}
	return id.Validity
}

// Kubeconfig encodes a kubeconfig for serverURL that trusts the CA and
// authenticates as id with a freshly issued client certificate (embedded,
// so the file stands alone) — what `myriad kubeconfig` prints for a
// component, a user or a node.
func (c *Credentials) Kubeconfig(serverURL string, id Identity) ([]byte, error) {
	certPEM, keyPEM, err := c.IssueClientCertificate(id.User, id.Groups, id.validity())
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = serverURL
	cluster.CertificateAuthorityData = c.CAPEM
	cfg.Clusters[KubeconfigCluster] = cluster
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData = certPEM
	user.ClientKeyData = keyPEM
	cfg.AuthInfos[id.User] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = KubeconfigCluster
	kctx.AuthInfo = id.User
	kctx.Namespace = "default"
	cfg.Contexts[KubeconfigContext] = kctx
	cfg.CurrentContext = KubeconfigContext
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("pki: encode kubeconfig: %w", err)
	}
	return data, nil
}

// LoadIssuer loads the CA in dir (ca.crt and ca.key, as EnsureCredentials
// wrote them) for issuing client certificates and kubeconfigs, without
// creating or re-issuing anything: for `myriad kubeconfig` beside a
// running server. ServingCert and Token are left empty.
func LoadIssuer(dir string) (*Credentials, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	ca, err := parseKeyPair(certPEM, keyPEM, certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if !ca.cert.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", certPath)
	}
	return &Credentials{Dir: dir, CACert: ca.cert, CAPEM: ca.certPEM, ca: ca}, nil
}
