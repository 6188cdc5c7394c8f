package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
	"github.com/myriad-k8s/myriad/internal/storage/etcd"
)

// stores are the API server's stores: the main one and the shards
// --etcd-servers-overrides asks for.
type stores struct {
	main   storage.Store
	shards []apiserver.StoreShard
	all    []storage.Store
}

func (s *stores) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// openStores opens the embedded store in DataDir, or one etcd client for
// --etcd-servers and one for each distinct set of servers the overrides
// name (overrides naming the same servers share a client and a shard, as
// upstream's do).
func openStores(ctx context.Context, cfg Config) (*stores, error) {
	if cfg.Storage == "embedded" {
		st, err := embedded.Open(ctx, embedded.Options{Dir: filepath.Join(cfg.DataDir, "store"), Logger: cfg.Logger.With("component", "store")})
		if err != nil {
			return nil, fmt.Errorf("opening store: %w", err)
		}
		return &stores{main: st, all: []storage.Store{st}}, nil
	}
	overrides, err := parseEtcdServersOverrides(cfg.Etcd.ServersOverrides)
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if cfg.Etcd.CAFile != "" || cfg.Etcd.CertFile != "" {
		if tlsCfg, err = etcd.TLSConfig(cfg.Etcd.CAFile, cfg.Etcd.CertFile, cfg.Etcd.KeyFile); err != nil {
			return nil, fmt.Errorf("etcd TLS: %w", err)
		}
	}
	layout, err := EtcdKeyLayout()
	if err != nil {
		return nil, err
	}
	out := &stores{}
	open := func(servers []string, name string) (storage.Store, error) {
		st, err := etcd.New(ctx, etcd.Config{
			Endpoints: servers, TLS: tlsCfg, Prefix: cfg.Etcd.Prefix, KeyLayout: layout,
			Logger: cfg.Logger.With("component", "etcd", "shard", name), Metrics: cfg.Metrics,
		})
		if err != nil {
			return nil, fmt.Errorf("etcd %s (%v): %w", name, servers, err)
		}
		out.all = append(out.all, st)
		return st, nil
	}
	if out.main, err = open(cfg.EtcdServers, "etcd-0"); err != nil {
		return nil, err
	}
	bySet := map[string]int{} // server set -> index in out.shards
	for _, o := range overrides {
		key := serverSetKey(o.servers)
		i, ok := bySet[key]
		if !ok {
			name := fmt.Sprintf("etcd-%d", len(out.shards)+1)
			st, err := open(o.servers, name)
			if err != nil {
				_ = out.close()
				return nil, err
			}
			i = len(out.shards)
			bySet[key] = i
			out.shards = append(out.shards, apiserver.StoreShard{Name: name, Store: st})
		}
		out.shards[i].Resources = append(out.shards[i].Resources, o.resource)
	}
	return out, nil
}

// EtcdKeyLayout keys built-in resources in etcd as upstream does, so an
// existing cluster's etcd can be read and Myriad's read by upstream's
// tools. Whatever writes Myriad's etcd directly (the restart bench's
// loader) must use it too.
func EtcdKeyLayout() (*etcd.KeyLayout, error) {
	reg, err := registry.New()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var prefixes []string
	for _, r := range reg.Resources() {
		p := reg.StorageResource(r).StorageKeyPrefix
		if !seen[p] {
			seen[p] = true
			prefixes = append(prefixes, p)
		}
	}
	layout, err := etcd.UpstreamKeyLayout(prefixes)
	if err != nil {
		return nil, fmt.Errorf("etcd key layout: %w", err)
	}
	return layout, nil
}
