package controlplane

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EtcdOptions are the etcd backend's settings besides Config.EtcdServers,
// named after upstream's flags. Zero values take the stated defaults.
type EtcdOptions struct {
	// CAFile, CertFile and KeyFile secure the connection to etcd
	// (--etcd-cafile, --etcd-certfile, --etcd-keyfile); empty: plain
	// HTTP, or the system roots for https:// servers without a CA.
	CAFile, CertFile, KeyFile string
	// Prefix is the key prefix everything is stored under (--etcd-prefix,
	// default /registry, where upstream keeps it).
	Prefix string
	// ServersOverrides put resources in etcd clusters of their own
	// (--etcd-servers-overrides, upstream's syntax:
	// "group/resource#url;url", core resources with an empty group,
	// "/events#http://etcd-events:2379").
	ServersOverrides []string
	// CompactionInterval is how often history is compacted
	// (--etcd-compaction-interval; default 5 minutes; negative: never,
	// which the flag spells 0 as upstream does).
	CompactionInterval time.Duration
}

// etcdOverride is one parsed --etcd-servers-overrides entry.
type etcdOverride struct {
	resource schema.GroupResource
	servers  []string
}

// errOverridesInvalid is upstream's message, word for word.
func errOverridesInvalid(entry string) error {
	return fmt.Errorf("--etcd-servers-overrides invalid, must be of format: group/resource#servers, where servers are URLs, semicolon separated (in %q)", entry)
}

// parseEtcdServersOverrides parses upstream's override syntax, as
// k8s.io/apiserver's ParseEtcdServersOverrides does, and refuses more
// than upstream what upstream would fail on later: an empty resource, a
// server that is not a URL, a resource overridden twice.
func parseEtcdServersOverrides(entries []string) ([]etcdOverride, error) {
	var out []etcdOverride
	seen := map[schema.GroupResource]bool{}
	for _, entry := range entries {
		res, servers, ok := strings.Cut(entry, "#")
		if !ok || strings.Contains(servers, "#") {
			return nil, errOverridesInvalid(entry)
		}
		group, resource, ok := strings.Cut(res, "/")
		if !ok || strings.Contains(resource, "/") || resource == "" {
			return nil, errOverridesInvalid(entry)
		}
		gr := schema.GroupResource{Group: group, Resource: resource}
		if seen[gr] {
			return nil, fmt.Errorf("--etcd-servers-overrides: %s is overridden twice", gr)
		}
		seen[gr] = true
		o := etcdOverride{resource: gr}
		for _, s := range strings.Split(servers, ";") {
			if err := validEtcdServer(s); err != nil {
				return nil, fmt.Errorf("%w: %w", errOverridesInvalid(entry), err)
			}
			o.servers = append(o.servers, s)
		}
		out = append(out, o)
	}
	return out, nil
}

// validEtcdServer accepts what etcd's client dials: an http or https URL
// with a host.
func validEtcdServer(s string) error {
	if s == "" {
		return errors.New("empty server")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("server %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server %q is not an http:// or https:// URL", s)
	}
	return nil
}

// serverSetKey identifies a set of etcd servers whatever their order:
// overrides naming the same servers share one client, as upstream's do.
func serverSetKey(servers []string) string {
	s := slices.Clone(servers)
	slices.Sort(s)
	return strings.Join(s, ";")
}

// validateStorage checks the storage settings and fills their defaults.
func (c *Config) validateStorage() error {
	if c.Storage == "" {
		c.Storage = "embedded"
	}
	if c.Etcd.Prefix == "" {
		c.Etcd.Prefix = "/registry"
	}
	if !strings.HasPrefix(c.Etcd.Prefix, "/") {
		return fmt.Errorf("--etcd-prefix %q must start with /", c.Etcd.Prefix)
	}
	if c.Etcd.CompactionInterval == 0 {
		c.Etcd.CompactionInterval = 5 * time.Minute
	}
	if c.GoawayChance < 0 || c.GoawayChance > 0.02 {
		// Upstream's bound and message.
		return fmt.Errorf("--goaway-chance can not be less than 0 or greater than 0.02")
	}
	if _, err := parseEtcdServersOverrides(c.Etcd.ServersOverrides); err != nil {
		return err
	}
	switch c.Storage {
	case "embedded":
		if len(c.EtcdServers) > 0 || len(c.Etcd.ServersOverrides) > 0 {
			return errors.New("--etcd-servers and --etcd-servers-overrides need --storage=etcd")
		}
	case "etcd":
		if len(c.EtcdServers) == 0 {
			return errors.New("--storage=etcd needs --etcd-servers")
		}
		for _, s := range c.EtcdServers {
			if err := validEtcdServer(s); err != nil {
				return fmt.Errorf("--etcd-servers: %w", err)
			}
		}
		if (c.Etcd.CertFile == "") != (c.Etcd.KeyFile == "") {
			return errors.New("--etcd-certfile and --etcd-keyfile go together")
		}
	default:
		return fmt.Errorf("--storage %q: want embedded or etcd", c.Storage)
	}
	return nil
}
