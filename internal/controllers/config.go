package controllers

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates/signer"
	"github.com/myriad-k8s/myriad/internal/controllers/nodelifecycle"
)

// Config configures one controller-manager process. Zero fields take the
// defaults stated beside them (those of kube-controller-manager).
type Config struct {
	// RESTConfig reaches the API server. Required.
	RESTConfig *rest.Config
	// Controllers names the controllers to run: "*" (the default) is all,
	// "name" enables one, "-name" disables one, as kube-controller-manager's
	// --controllers.
	Controllers []string
	// LeaderElect runs controllers only while holding the Lease
	// LeaseNamespace/LeaseName; without it they run at once.
	LeaderElect bool
	// Identity is this replica's holder identity (default hostname_pid).
	Identity string
	// LeaseNamespace and LeaseName name the leader Lease
	// (default kube-system/kube-controller-manager).
	LeaseNamespace, LeaseName string
	// LeaseDuration (15 s) is how long a standby waits after the last
	// renewal before it takes over a crashed leader; RenewDeadline (10 s)
	// how long the leader keeps retrying a renewal before giving up;
	// RetryPeriod (2 s) the interval between renewals and acquire attempts.
	// Standbys also watch the Lease and try at once when it is released.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// UseServiceAccountCredentials gives each controller a client acting
	// as its own ServiceAccount in kube-system (package saclient), as
	// kube-controller-manager's --use-service-account-credentials; without
	// it every controller writes as the manager.
	UseServiceAccountCredentials bool

	// RootCA is the PEM bundle published as kube-root-ca.crt in every
	// namespace (default: RESTConfig.CAData, else the file RESTConfig.CAFile).
	RootCA []byte

	// ClusterSigning is the CA the csrsigning controller issues
	// certificates from, and the longest validity it issues (default one
	// year). Without CertFile and KeyFile that controller does not run.
	ClusterSigning signer.Options

	// ServiceAccountKeyFile is the PEM private key the serviceaccount-token
	// controller signs legacy tokens with: the API server's ServiceAccount
	// signing key (kube-controller-manager's
	// --service-account-private-key-file). Empty: that controller does not
	// run.
	ServiceAccountKeyFile string

	// NodeLifecycle holds the node lifecycle controller's knobs (grace
	// period 40 s, eviction rates 0.1 and 0.01 nodes/s, ...).
	NodeLifecycle nodelifecycle.Options

	// Informers, when set, is the typed factory the controllers share
	// with other components of the process (`myriad up`'s scheduler):
	// the manager registers the controllers' handlers there and starts
	// it, but neither owns nor shuts it down; its objects are read-only
	// and must have managedFields dropped already. Nil: the manager builds
	// its own factory on its client, as kube-controller-manager.
	Informers informers.SharedInformerFactory

	// Logger defaults to slog.Default(); Metrics may be nil (no metrics).
	Logger  *slog.Logger
	Metrics prometheus.Registerer
	// Clock is the real clock unless a test injects one.
	Clock clock.WithTicker
}

func (c Config) withDefaults() (Config, error) {
	if c.RESTConfig == nil {
		return c, errors.New("controllers: RESTConfig is required")
	}
	if len(c.Controllers) == 0 {
		c.Controllers = []string{"*"}
	}
	if c.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("controllers: identity: %w", err)
		}
		c.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = "kube-system"
	}
	if c.LeaseName == "" {
		c.LeaseName = "kube-controller-manager"
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.LeaderElect && (c.LeaseDuration <= c.RenewDeadline || c.RenewDeadline <= c.RetryPeriod) {
		return c, fmt.Errorf("controllers: need lease duration (%v) > renew deadline (%v) > retry period (%v)", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	if c.RootCA == nil {
		c.RootCA = c.RESTConfig.CAData
		if len(c.RootCA) == 0 && c.RESTConfig.CAFile != "" {
			b, err := os.ReadFile(c.RESTConfig.CAFile)
			if err != nil {
				return c, fmt.Errorf("controllers: reading CA file: %w", err)
			}
			c.RootCA = b
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}

// Enabled reports whether name is selected by the --controllers list:
// an explicit "-name" or "name" wins over "*".
func Enabled(list []string, name string) bool {
	star := false
	for _, s := range list {
		s = strings.TrimSpace(s)
		switch s {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			star = true
		}
	}
	return star
}
