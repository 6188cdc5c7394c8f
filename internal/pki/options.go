package pki

import (
	"net"
	"time"
)

// Options says what the serving certificate must cover and how long
// certificates live. The zero value is usable.
type Options struct {
	// BindAddress is the address the server listens on. It is added to the
	// serving certificate unless empty or unspecified (0.0.0.0, ::), which no
	// client can dial by that name.
	BindAddress string
	// ExtraSANs are further DNS names or IP addresses clients may use to
	// reach the server (load balancer names, node IPs, a service IP).
	ExtraSANs []string
	// ServingValidity is the lifetime of a newly issued serving
	// certificate. Default 365 days.
	ServingValidity time.Duration
	// RenewBefore re-issues the serving certificate when it expires within
	// this window. Default 30 days.
	RenewBefore time.Duration
	// CAValidity is the lifetime of a newly created CA. Default 10 years.
	CAValidity time.Duration
	// Now is the clock; defaults to time.Now. Tests inject a later time to
	// exercise renewal.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.ServingValidity <= 0 {
		o.ServingValidity = 365 * 24 * time.Hour
	}
	if o.RenewBefore <= 0 {
		o.RenewBefore = 30 * 24 * time.Hour
	}
	if o.CAValidity <= 0 {
		o.CAValidity = 10 * 365 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// sans returns the DNS names and IPs the serving certificate must carry:
// the loopback names every local client uses, the in-cluster service names
// pods use, the bind address and the extras.
func (o Options) sans() (dns []string, ips []net.IP) {
	dns = []string{
		"localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	}
	ips = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	add := func(s string) {
		if s == "" {
			return
		}
		if ip := net.ParseIP(s); ip != nil {
			if ip.IsUnspecified() || containsIP(ips, ip) {
				return
			}
			ips = append(ips, ip)
			return
		}
		if !containsString(dns, s) {
			dns = append(dns, s)
		}
	}
	add(o.BindAddress)
	for _, s := range o.ExtraSANs {
		add(s)
	}
	return dns, ips
}

func containsIP(ips []net.IP, ip net.IP) bool {
	for _, x := range ips {
		if x.Equal(ip) {
			return true
		}
	}
	return false
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
