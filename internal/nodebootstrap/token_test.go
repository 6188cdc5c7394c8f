package nodebootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

func TestCreateToken(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		opts       TokenOptions
		expiration string
		groups     string
		fails      bool
	}{
		{"default", TokenOptions{TTL: 24 * time.Hour}, "2026-11-27T12:00:00Z", DefaultGroup, false},
		{"no expiry", TokenOptions{}, "", DefaultGroup, false},
		{"groups", TokenOptions{TTL: time.Hour, Groups: []string{"system:bootstrappers:a", "system:bootstrappers:b"}}, "2026-11-26T13:00:00Z", "system:bootstrappers:a,system:bootstrappers:b", false},
		{"foreign group", TokenOptions{Groups: []string{"system:masters"}}, "", "", true},
		{"negative ttl", TokenOptions{TTL: -time.Second}, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			tc.opts.Now = func() time.Time { return now }
			tc.opts.Description = "test"
			token, err := CreateToken(context.Background(), cs, tc.opts)
			if tc.fails {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bootstraputil.IsValidBootstrapToken(token) {
				t.Fatalf("token %q is not a bootstrap token", token)
			}
			id, secret, _ := strings.Cut(token, ".")
			s, err := cs.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+id, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				bootstrapapi.BootstrapTokenIDKey: id, bootstrapapi.BootstrapTokenSecretKey: secret,
				bootstrapapi.BootstrapTokenUsageAuthentication: "true", bootstrapapi.BootstrapTokenUsageSigningKey: "true",
				bootstrapapi.BootstrapTokenExtraGroupsKey: tc.groups, bootstrapapi.BootstrapTokenExpirationKey: tc.expiration,
				bootstrapapi.BootstrapTokenDescriptionKey: "test",
			}
			if s.Type != bootstrapapi.SecretTypeBootstrapToken {
				t.Errorf("type %s", s.Type)
			}
			for k, v := range want {
				if string(s.Data[k]) != v {
					t.Errorf("%s = %q, want %q", k, s.Data[k], v)
				}
			}
		})
	}
}

func TestKubeconfig(t *testing.T) {
	data, err := Kubeconfig("https://10.0.0.1:6443", []byte("CA"), "abcdef.0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" || cfg.BearerToken != "abcdef.0123456789abcdef" || string(cfg.CAData) != "CA" {
		t.Errorf("config %+v", cfg)
	}
}
