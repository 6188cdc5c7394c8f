package main

import (
	"flag"
	"strconv"
	"time"

	"github.com/myriad-k8s/myriad/internal/controlplane"
)

// securityFlags adds upstream's authentication and audit flags to fs.
func securityFlags(fs *flag.FlagSet, cfg *controlplane.Config) {
	a := &cfg.Authentication
	fs.StringVar(&a.TokenAuthFile, "token-auth-file", "", "CSV of static bearer tokens: token,user,uid,\"group1,group2\"")
	fs.StringVar(&a.AuthenticationConfigFile, "authentication-config", "", "AuthenticationConfiguration file (JWT issuers, anonymous access)")
	fs.StringVar(&a.WebhookConfigFile, "authentication-token-webhook-config-file", "", "kubeconfig of a TokenReview webhook that authenticates bearer tokens")
	fs.DurationVar(&a.WebhookCacheTTL, "authentication-token-webhook-cache-ttl", 2*time.Minute, "how long the token webhook's verdicts are cached")
	fs.Var(optionalBool{&a.AnonymousAuth}, "anonymous-auth", "allow requests without credentials as system:anonymous where permitted (default true)")
	fs.BoolVar(&cfg.EnableBootstrapTokenAuth, "enable-bootstrap-token-auth", true, "accept bootstrap tokens (kube-system Secrets of type bootstrap.kubernetes.io/token) for node TLS bootstrap, as kubeadm sets")

	au := &cfg.Audit
	fs.StringVar(&au.PolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy; auditing is on with it and a backend")
	fs.StringVar(&au.LogPath, "audit-log-path", "", "audit log file, - for standard output")
	fs.IntVar(&au.LogMaxAge, "audit-log-maxage", 0, "days to keep rotated audit logs (0: no limit)")
	fs.IntVar(&au.LogMaxBackups, "audit-log-maxbackup", 0, "rotated audit logs to keep (0: all)")
	fs.IntVar(&au.LogMaxSize, "audit-log-maxsize", 0, "megabytes at which the audit log rotates (0: never)")
	fs.StringVar(&au.LogMode, "audit-log-mode", "batch", "batch (queued, written by a goroutine), blocking or blocking-strict")
	fs.StringVar(&au.WebhookConfigFile, "audit-webhook-config-file", "", "kubeconfig of a webhook that receives audit EventLists")
}

// optionalBool is a bool flag that remembers whether it was set, as
// --anonymous-auth must not be combined with the anonymous section of
// --authentication-config.
type optionalBool struct{ p **bool }

func (o optionalBool) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*o.p = &b
	return nil
}

func (o optionalBool) String() string {
	if o.p == nil || *o.p == nil {
		return "true"
	}
	return strconv.FormatBool(**o.p)
}

func (optionalBool) IsBoolFlag() bool { return true }
