package controlplane

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/aggregator"
	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// newAggregator builds the API aggregation layer in front of api (package
// aggregator): the front-proxy CA and client certificate in the data
// directory, the in-process informers and writer, and readiness gated on
// its informers. Start it after api.Start; Stop it before api.Stop.
func newAggregator(dataDir string, api *apiserver.Server, reg *registry.Registry, creds *pki.Credentials, metrics prometheus.Registerer, log *slog.Logger) (*aggregator.Aggregator, error) {
	fp, err := pki.EnsureFrontProxy(dataDir)
	if err != nil {
		return nil, err
	}
	agg, err := aggregator.New(aggregator.Config{
		ListerWatcher:      api.ListerWatcher,
		Objects:            api.Objects(),
		LocalGroupVersions: reg.GroupVersions(),
		ProxyClientCertPEM: fp.ClientCertPEM,
		ProxyClientKeyPEM:  fp.ClientKeyPEM,
		Authentication: &aggregator.AuthenticationInfo{
			ClientCAPEM: creds.CAPEM, RequestHeaderCAPEM: fp.CAPEM, AllowedNames: []string{pki.FrontProxyClientUser},
		},
		Logger:  log.With("component", "aggregator"),
		Metrics: metrics,
	})
	if err != nil {
		return nil, err
	}
	api.AddReadinessCheck("aggregator-informers", agg.Ready)
	// CRDs' group versions get Local APIServices as upstream's
	// crdRegistrationController makes them.
	api.OnCustomGroupVersions(func(ctx context.Context, added, removed []schema.GroupVersion) {
		for _, gv := range added {
			if err := agg.RegisterLocal(ctx, gv, aggregator.CRDPriority); err != nil {
				log.Warn("registering the APIService of a CRD group version", "groupVersion", gv, "err", err)
			}
		}
		for _, gv := range removed {
			if err := agg.RemoveLocal(ctx, gv); err != nil {
				log.Warn("removing the APIService of a CRD group version", "groupVersion", gv, "err", err)
			}
		}
	})
	return agg, nil
}
