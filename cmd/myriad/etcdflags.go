package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/myriad-k8s/myriad/internal/controlplane"
)

// storageFlags are the storage and load-balancing flags shared by up and
// apiserver, under upstream's names; controlplane.Config validates them.
func storageFlags(fs *flag.FlagSet, cfg *controlplane.Config) {
	fs.StringVar(&cfg.Storage, "storage", "embedded", "storage backend: embedded (in the data dir) or etcd (--etcd-servers)")
	fs.Func("etcd-servers", "comma-separated etcd URLs (with --storage=etcd)", func(v string) error {
		cfg.EtcdServers = splitList(v)
		return nil
	})
	fs.StringVar(&cfg.Etcd.CAFile, "etcd-cafile", "", "CA bundle that verifies the etcd servers' certificates")
	fs.StringVar(&cfg.Etcd.CertFile, "etcd-certfile", "", "client certificate for etcd")
	fs.StringVar(&cfg.Etcd.KeyFile, "etcd-keyfile", "", "client key for etcd")
	fs.StringVar(&cfg.Etcd.Prefix, "etcd-prefix", "/registry", "key prefix everything is stored under in etcd")
	fs.Func("etcd-servers-overrides", "per-resource etcd servers, comma separated; each group/resource#servers, servers semicolon-separated URLs, "+
		`e.g. "/pods#http://etcd4:2379;http://etcd5:2379,/events#http://etcd6:2379"`, func(v string) error {
		cfg.Etcd.ServersOverrides = append(cfg.Etcd.ServersOverrides, splitList(v)...)
		return nil
	})
	fs.Func("etcd-compaction-interval", "how often history is compacted (default 5m0s; 0 disables compaction)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("negative interval %s", d)
		}
		if d == 0 {
			d = -1 // controlplane's "never"; its zero is the default
		}
		cfg.Etcd.CompactionInterval = d
		return nil
	})
	fs.Float64Var(&cfg.GoawayChance, "goaway-chance", 0, "share of HTTP/2 requests (0-0.02) answered with GOAWAY so clients reconnect, possibly to another API server behind the load balancer; "+
		"leave 0 with a single API server")
}
