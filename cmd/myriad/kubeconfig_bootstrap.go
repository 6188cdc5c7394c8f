package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/nodebootstrap"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// bootstrapKubeconfig creates a bootstrap token through the API with the
// admin kubeconfig of dataDir and returns a bootstrap kubeconfig with it
// for server (default: the admin kubeconfig's server) and the data dir's
// CA.
func bootstrapKubeconfig(ctx context.Context, dataDir, server string, ttl time.Duration) ([]byte, error) {
	admin := filepath.Join(dataDir, "kubeconfig")
	rc, err := clientcmd.BuildConfigFromFlags(server, admin)
	if err != nil {
		return nil, fmt.Errorf("loading the admin kubeconfig (is the control plane of --data-dir %s running?): %w", dataDir, err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dataDir, pki.CACertFile))
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	token, err := nodebootstrap.CreateToken(ctx, cs, nodebootstrap.TokenOptions{
		TTL: ttl, Description: "bootstrap token made by myriad kubeconfig --bootstrap",
	})
	if err != nil {
		return nil, err
	}
	return nodebootstrap.Kubeconfig(rc.Host, caPEM, token)
}
