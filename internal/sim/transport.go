package sim

import (
	"fmt"
	"net/http"
	"time"

	"golang.org/x/net/http2"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// withSharedConnTransport gives rc the transport client-go would build for
// it, with one difference: the HTTP/2 header encoder keeps no dynamic
// table.
//
// A kubelet has its own connection, on which its Lease's path is indexed
// once and sent as a one-byte reference ever after. The simulator's
// 10,000 nodes share a few connections, so every request's path is new to
// the 4 KB table: each one was inserted and evicted an older entry, which
// cost about a tenth of the simulator's CPU (profile in
// docs/bench/sim.md, run 8). Sending headers as literals costs less than
// that churn and changes nothing the API server sees but a few bytes.
func withSharedConnTransport(rc *rest.Config) error {
	tlsConfig, err := rest.TLSConfigFor(rc)
	if err != nil {
		return fmt.Errorf("sim: TLS config: %w", err)
	}
	t := utilnet.SetOldTransportDefaults(&http.Transport{
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25, // client-go's idleConnsPerHost
		DisableCompression:  rc.DisableCompression,
	})
	if tlsConfig != nil {
		t2, err := http2.ConfigureTransports(t)
		if err != nil {
			return fmt.Errorf("sim: configuring HTTP/2: %w", err)
		}
		// client-go's connection health check (utilnet's defaults).
		t2.ReadIdleTimeout = 30 * time.Second
		t2.PingTimeout = 15 * time.Second
		// Zero would mean the default 4 KB; no header field fits in one byte.
		t2.MaxEncoderHeaderTableSize = 1
	}
	if rc.Dial != nil {
		t.DialContext = rc.Dial
	}
	if rc.Proxy != nil {
		t.Proxy = rc.Proxy
	}
	rc.Transport = t
	// client-go refuses TLS options beside a custom transport: they live
	// in tlsConfig now.
	rc.TLSClientConfig = rest.TLSClientConfig{}
	rc.Dial = nil
	return nil
}
