package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// runKubeconfig prints (or writes) a kubeconfig with a client certificate
// from the data dir's CA: for a component (--user system:kube-scheduler),
// a person (--user alice --group devs), or a node (--node NAME, which is
// system:node:NAME in system:nodes, the identity the Node authorizer
// recognizes) — or, with --bootstrap, a new bootstrap token and the
// bootstrap kubeconfig a kubelet joins with (kubeconfig_bootstrap.go).
func runKubeconfig(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("myriad kubeconfig", flag.ContinueOnError)
	dataDir := fs.String("data-dir", ".myriad", "data directory of the control plane whose CA signs the certificate")
	server := fs.String("server", "", "API server URL (default: https://127.0.0.1:6443)")
	user := fs.String("user", "", "user name (the certificate's CN)")
	node := fs.String("node", "", "node name: the identity system:node:NAME in group system:nodes")
	validity := fs.Duration("validity", 365*24*time.Hour, "how long the certificate is valid")
	out := fs.String("o", "", "write to this file (0600) instead of standard output")
	bootstrap := fs.Bool("bootstrap", false, "create a bootstrap token (through the API, as the data dir's admin) and print a kubelet --bootstrap-kubeconfig with it")
	ttl := fs.Duration("ttl", 24*time.Hour, "with --bootstrap: how long the token is valid (0: never expires)")
	var groups []string
	fs.Func("group", "group (the certificate's O); repeatable", func(v string) error {
		groups = append(groups, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bootstrap {
		if *user != "" || *node != "" || len(groups) > 0 {
			return errors.New("--bootstrap makes a token for any new node; do not combine it with --user, --node or --group")
		}
		data, err := bootstrapKubeconfig(ctx, *dataDir, *server, *ttl)
		if err != nil {
			return err
		}
		return writeOutput(stdout, *out, data)
	}
	var id pki.Identity
	switch {
	case *node != "" && (*user != "" || len(groups) > 0):
		return errors.New("--node names the whole identity; do not combine it with --user or --group")
	case *node != "":
		id = pki.NodeIdentity(*node)
	case *user != "":
		id = pki.Identity{User: *user, Groups: groups}
	default:
		return errors.New("one of --user or --node is required")
	}
	id.Validity = *validity
	if *server == "" {
		*server = pki.ServerURL("127.0.0.1", 6443)
	}
	creds, err := pki.LoadIssuer(*dataDir)
	if err != nil {
		return err
	}
	data, err := creds.Kubeconfig(*server, id)
	if err != nil {
		return err
	}
	return writeOutput(stdout, *out, data)
}

// writeOutput writes data to out (0600), or to stdout when out is empty.
func writeOutput(stdout io.Writer, out string, data []byte) error {
	if out == "" {
		_, err := stdout.Write(data)
		return err
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
