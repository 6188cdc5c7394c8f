package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config says which etcd to use and how. The zero value of every optional
// field selects the default stated next to it.
type Config struct {
	// Endpoints are the client URLs of the etcd members (required).
	Endpoints []string
	// TLS secures the connection; nil means plain TCP. See TLSConfig.
	TLS *tls.Config
	// Prefix is prepended to every key (default "/registry", upstream's
	// --etcd-prefix). A trailing slash is ignored.
	Prefix string
	// KeyLayout translates Myriad's keys to the etcd keys below Prefix;
	// nil stores Myriad's keys unchanged. UpstreamKeyLayout gives
	// upstream's layout.
	KeyLayout *KeyLayout
	// Logger receives warnings about retries and lost watches (default:
	// discard).
	Logger *slog.Logger
	// Metrics, when set, receives the etcd_* metrics (metrics.go). Several
	// stores may share one registerer.
	Metrics prometheus.Registerer
	// DialTimeout bounds establishing a connection (default 5 s). New does
	// not wait for etcd: an unreachable etcd is reported by Health and by
	// the requests themselves.
	DialTimeout time.Duration
	// RequestTimeout bounds every request, retries included, when the
	// caller's context allows longer (default 10 s).
	RequestTimeout time.Duration
	// HealthTimeout bounds Health's read, as upstream's
	// --etcd-healthcheck-timeout does (default 2 s).
	HealthTimeout time.Duration
	// ListPageSize is how many keys one etcd range returns while a List
	// pages through a large prefix at one revision (default 10,000).
	ListPageSize int64
	// DBSizeInterval is how often etcd_db_total_size_in_bytes is refreshed
	// (default 30 s).
	DBSizeInterval time.Duration
}

const (
	defaultPrefix         = "/registry"
	defaultDialTimeout    = 5 * time.Second
	defaultRequestTimeout = 10 * time.Second
	defaultHealthTimeout  = 2 * time.Second
	defaultListPageSize   = 10000
	defaultDBSizeInterval = 30 * time.Second
)

func (c *Config) fillDefaults() error {
	if len(c.Endpoints) == 0 {
		return errors.New("etcd: no endpoints")
	}
	for _, ep := range c.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return fmt.Errorf("etcd: empty endpoint in %q", c.Endpoints)
		}
	}
	if c.Prefix == "" {
		c.Prefix = defaultPrefix
	}
	c.Prefix = strings.TrimRight(c.Prefix, "/")
	if c.Prefix != "" && !strings.HasPrefix(c.Prefix, "/") {
		// Upstream joins the prefix and the key as paths; a prefix without
		// the leading slash names the same keys with it.
		c.Prefix = "/" + c.Prefix
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = defaultDialTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = defaultRequestTimeout
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = defaultHealthTimeout
	}
	if c.ListPageSize <= 0 {
		c.ListPageSize = defaultListPageSize
	}
	if c.DBSizeInterval <= 0 {
		c.DBSizeInterval = defaultDBSizeInterval
	}
	return nil
}

// TLSConfig builds the client TLS configuration from upstream's
// --etcd-cafile, --etcd-certfile and --etcd-keyfile. Empty file names leave
// the corresponding part out (system roots, no client certificate); all
// three empty returns nil, a plain connection.
func TLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("etcd: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd: CA file %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("etcd: a client certificate needs both --etcd-certfile and --etcd-keyfile (got %q and %q)", certFile, keyFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd: load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
