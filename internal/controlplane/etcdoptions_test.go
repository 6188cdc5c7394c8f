package controlplane

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseEtcdServersOverrides(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []string
		want    []etcdOverride
		wantErr string
	}{
		{name: "none"},
		{name: "upstream's example", in: []string{"/pods#http://etcd4:2379;http://etcd5:2379", "/events#http://etcd6:2379"},
			want: []etcdOverride{
				{schema.GroupResource{Resource: "pods"}, []string{"http://etcd4:2379", "http://etcd5:2379"}},
				{schema.GroupResource{Resource: "events"}, []string{"http://etcd6:2379"}},
			}},
		{name: "group", in: []string{"coordination.k8s.io/leases#https://10.0.0.1:2379"},
			want: []etcdOverride{{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, []string{"https://10.0.0.1:2379"}}}},
		{name: "no servers", in: []string{"/pods"}, wantErr: "must be of format"},
		{name: "two hashes", in: []string{"/pods#http://a:1#x"}, wantErr: "must be of format"},
		{name: "no slash", in: []string{"pods#http://a:1"}, wantErr: "must be of format"},
		{name: "too many slashes", in: []string{"apps/v1/deployments#http://a:1"}, wantErr: "must be of format"},
		{name: "empty resource", in: []string{"apps/#http://a:1"}, wantErr: "must be of format"},
		{name: "empty server", in: []string{"/pods#http://a:1;"}, wantErr: "empty server"},
		{name: "not a URL", in: []string{"/pods#etcd4:2379"}, wantErr: "not an http:// or https:// URL"},
		{name: "twice", in: []string{"/pods#http://a:1", "/pods#http://b:1"}, wantErr: "overridden twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseEtcdServersOverrides(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i].resource != c.want[i].resource || strings.Join(got[i].servers, ";") != strings.Join(c.want[i].servers, ";") {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

// FuzzParseEtcdServersOverrides: any flag value is parsed or refused,
// never a crash, and what is accepted has a resource and URL servers.
func FuzzParseEtcdServersOverrides(f *testing.F) {
	for _, s := range []string{"/pods#http://etcd4:2379;http://etcd5:2379", "apps/deployments#https://a:1", "#", "/#", "a/b#;", "/pods#http://[::1]:2379"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseEtcdServersOverrides(strings.Split(s, ","))
		if err != nil {
			return
		}
		for _, o := range got {
			if o.resource.Resource == "" || len(o.servers) == 0 {
				t.Fatalf("%q accepted as %v", s, got)
			}
			for _, srv := range o.servers {
				if validEtcdServer(srv) != nil {
					t.Fatalf("%q accepted server %q", s, srv)
				}
			}
		}
	})
}

func TestValidateStorage(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "embedded default", cfg: Config{}},
		{name: "etcd", cfg: Config{Storage: "etcd", EtcdServers: []string{"http://127.0.0.1:2379"}}},
		{name: "etcd with overrides", cfg: Config{Storage: "etcd", EtcdServers: []string{"http://a:2379"}, Etcd: EtcdOptions{ServersOverrides: []string{"/events#http://b:2379"}}}},
		{name: "unknown backend", cfg: Config{Storage: "consul"}, wantErr: `--storage "consul"`},
		{name: "etcd without servers", cfg: Config{Storage: "etcd"}, wantErr: "needs --etcd-servers"},
		{name: "bad server", cfg: Config{Storage: "etcd", EtcdServers: []string{"a:2379"}}, wantErr: "--etcd-servers"},
		{name: "servers without etcd", cfg: Config{EtcdServers: []string{"http://a:2379"}}, wantErr: "need --storage=etcd"},
		{name: "overrides without etcd", cfg: Config{Etcd: EtcdOptions{ServersOverrides: []string{"/events#http://b:2379"}}}, wantErr: "need --storage=etcd"},
		{name: "bad override", cfg: Config{Storage: "etcd", EtcdServers: []string{"http://a:2379"}, Etcd: EtcdOptions{ServersOverrides: []string{"events"}}}, wantErr: "--etcd-servers-overrides invalid"},
		{name: "cert without key", cfg: Config{Storage: "etcd", EtcdServers: []string{"https://a:2379"}, Etcd: EtcdOptions{CertFile: "c"}}, wantErr: "go together"},
		{name: "relative prefix", cfg: Config{Etcd: EtcdOptions{Prefix: "registry"}}, wantErr: "must start with /"},
		{name: "goaway too high", cfg: Config{GoawayChance: 0.05}, wantErr: "--goaway-chance can not be"},
		{name: "goaway negative", cfg: Config{GoawayChance: -0.01}, wantErr: "--goaway-chance can not be"},
		{name: "goaway max", cfg: Config{GoawayChance: 0.02}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			err := cfg.validateStorage()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Etcd.Prefix != "/registry" || cfg.Etcd.CompactionInterval != 5*time.Minute {
				t.Fatalf("defaults not filled: %+v", cfg.Etcd)
			}
		})
	}
}
