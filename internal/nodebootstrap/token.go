package nodebootstrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// DefaultGroup is the extra group of node tokens, naming what they are
// for (kubeadm's is system:bootstrappers:kubeadm:default-node-token). The
// default policy's grants are to every bootstrap token
// (system:bootstrappers), which these are too.
const DefaultGroup = "system:bootstrappers:myriad:default-node-token"

// TokenOptions describe a bootstrap token.
type TokenOptions struct {
	// TTL is how long the token is valid; zero: forever (discouraged, as
	// kubeadm warns). The token cleaner deletes it once expired.
	TTL time.Duration
	// Groups are the extra groups (auth-extra-groups), each
	// system:bootstrappers:*; default DefaultGroup.
	Groups []string
	// Description goes in the Secret.
	Description string
	// Now is the time the expiration counts from (default time.Now()).
	Now func() time.Time
}

// CreateToken creates a random bootstrap token through cs, valid for
// authentication and for signing cluster-info, and returns it as
// "<id>.<secret>".
func CreateToken(ctx context.Context, cs kubernetes.Interface, opts TokenOptions) (string, error) {
	if opts.TTL < 0 {
		return "", errors.New("nodebootstrap: negative TTL")
	}
	if len(opts.Groups) == 0 {
		opts.Groups = []string{DefaultGroup}
	}
	for _, g := range opts.Groups {
		if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
			return "", fmt.Errorf("nodebootstrap: %w", err)
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", fmt.Errorf("nodebootstrap: generating a token: %w", err)
	}
	id, secret, _ := strings.Cut(token, ".")
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(id),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
		bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(strings.Join(opts.Groups, ",")),
	}
	if opts.Description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(opts.Description)
	}
	if opts.TTL > 0 {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(opts.Now().Add(opts.TTL).UTC().Format(time.RFC3339))
	}
	_, err = cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("nodebootstrap: creating the token's Secret: %w", err)
	}
	return token, nil
}

// kubeconfigUser is kubeadm's name for the bootstrap kubeconfig's user.
const kubeconfigUser = "tls-bootstrap-token-user"

// Kubeconfig encodes a bootstrap kubeconfig: serverURL trusted by caPEM,
// authenticating with token.
func Kubeconfig(serverURL string, caPEM []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = serverURL
	cluster.CertificateAuthorityData = caPEM
	cfg.Clusters["myriad"] = cluster
	user := clientcmdapi.NewAuthInfo()
	user.Token = token
	cfg.AuthInfos[kubeconfigUser] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = "myriad"
	kctx.AuthInfo = kubeconfigUser
	cfg.Contexts[kubeconfigUser+"@myriad"] = kctx
	cfg.CurrentContext = kubeconfigUser + "@myriad"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("nodebootstrap: encoding the kubeconfig: %w", err)
	}
	return data, nil
}
